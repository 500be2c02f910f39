-- sliding_log.lua: KEYS[lim.key] = sorted set of admitted checks, member "<seq>:<cost>", score = time ms;
-- KEYS[lim.key2] = "<sum>:<seq>:<oldest>:<newest>", the running sum of the set (so a check reads one
-- string, and the set only when entries slid out or a retry time is needed). Both expire together.
ALG.sl = {}

local function sl_cost(member)
  return tonumber(match(member, ':(%d+)$'))
end

local function sl_rebuild(st, lim)
  local all = call('ZRANGE', lim.key, 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    local at = tonumber(all[i + 1])
    st.seq = max(st.seq, tonumber(match(all[i], '^(%d+):')))
    if at > st.cut then
      st.sum = st.sum + sl_cost(all[i])
      st.newest = at
    else
      st.drop = true
    end
  end
end

function ALG.sl.load(lim, now)
  -- Every field in the constructor (growing the table rehashes); pending: made by the first apply.
  local st = {sum = 0, seq = 0, oldest = nil, newest = nil, pending = false, cut = now - lim.per, drop = false,
    lim = lim, dirty = false}
  local raw = fetch(lim.key2)
  if not raw then
    sl_rebuild(st, lim)
    return st
  end
  local sum, seq, oldest, newest = match(raw, '^(%d+):(%d+):(%d+):(%d+)$')
  st.sum, st.seq, st.oldest, st.newest = tonumber(sum), tonumber(seq), tonumber(oldest), tonumber(newest)
  if st.newest <= st.cut then
    st.sum, st.newest, st.drop = 0, nil, true
  elseif st.oldest <= st.cut then
    for _, member in ipairs(call('ZRANGEBYSCORE', lim.key, '-inf', itos(st.cut))) do
      st.sum = st.sum - sl_cost(member)
    end
    st.drop = true
  end
  return st
end

function ALG.sl.eval(st, lim, now, cost)
  if cost > lim.q then return false, -1 end
  local need = st.sum + cost - lim.q
  if need <= 0 then return true, 0 end
  local freed = 0
  local live = call('ZRANGEBYSCORE', lim.key, '(' .. itos(st.cut), '+inf', 'WITHSCORES')
  for i = 1, #live, 2 do
    freed = freed + sl_cost(live[i])
    if freed >= need then return false, tonumber(live[i + 1]) + lim.per - now end
  end
  for _, entry in ipairs(st.pending or {}) do
    freed = freed + entry[2]
    if freed >= need then return false, entry[1] + lim.per - now end
  end
  return false, -1
end

function ALG.sl.apply(st, lim, now, cost)
  st.seq = st.seq + 1
  local pending = st.pending or {}
  pending[#pending + 1] = {now, cost, format('%d:%d', st.seq, cost)}
  st.pending = pending
  st.sum = st.sum + cost
  st.newest = now
  st.dirty = true
end

function ALG.sl.report(st, lim, now)
  local reset = 0
  if st.newest then reset = st.newest + lim.per - now end
  return max(0, lim.q - st.sum), reset
end

function ALG.sl.save(st, lim, now)
  if st.drop then call('ZREMRANGEBYSCORE', lim.key, '-inf', itos(st.cut)) end
  -- One ZADD per 500 new entries (a batch on one key adds one per item); a time's text is made once (the
  -- entries of a call share it), and a single entry needs no argument table.
  local pending = st.pending
  if #pending == 1 then
    call('ZADD', lim.key, itos(pending[1][1]), pending[1][3])
  else
    for first = 1, #pending, 500 do
      local args, stamp, text = {'ZADD', lim.key}, nil, nil
      for n = first, math.min(first + 499, #pending) do
        local entry = pending[n]
        if entry[1] ~= stamp then stamp, text = entry[1], itos(entry[1]) end
        args[#args + 1] = text
        args[#args + 1] = entry[3]
      end
      call(unpack(args))
    end
  end
  local oldest = st.oldest
  if st.drop or not oldest then
    oldest = tonumber(call('ZRANGE', lim.key, 0, 0, 'WITHSCORES')[2])
  end
  local expiry = ttl(st.newest + lim.per - now)
  local value = format('%d:%d:%d:%d', st.sum, st.seq, oldest, st.newest)
  call('SET', lim.key2, value, 'PX', expiry)
  call('PEXPIRE', lim.key, expiry)
end

-- Cluster refund (refund.lua): one entry of the reservation's time and cost goes (entries alike are
-- interchangeable), and the running sum is worked out again from the set (a refund is rare; a set left empty
-- goes with its sum).
function ALG.sl.refund(lim, cost, at, now)
  local suffix = ':' .. itos(cost)
  for _, member in ipairs(call('ZRANGEBYSCORE', lim.key, itos(at), itos(at))) do
    if string.sub(member, -#suffix) == suffix then
      call('ZREM', lim.key, member)
      break
    end
  end
  local all = call('ZRANGE', lim.key, 0, -1, 'WITHSCORES')
  if #all == 0 then
    call('DEL', lim.key, lim.key2)
    return
  end
  local sum, seq = 0, 0
  for i = 1, #all, 2 do
    sum = sum + sl_cost(all[i])
    seq = max(seq, tonumber(match(all[i], '^(%d+):')))
  end
  local summary = call('GET', lim.key2)
  if summary then seq = max(seq, tonumber(match(summary, '^%d+:(%d+):'))) end
  call('SET', lim.key2, format('%d:%d:%d:%d', sum, seq, tonumber(all[2]), tonumber(all[#all])), 'KEEPTTL')
end
