-- refund.lua: give back what check.lua spent on counters of one cluster slot for a check that another slot
-- then refused (apps/engine/store/cluster.py reserves slot by slot and refunds on rejection). Assembled
-- after lib.lua and the algorithm fragments, like check.lua; every key is in one slot.
--
-- KEYS: per counter its key (a sliding log: then its sum key), then the usage hash that recorded what the
--   reservation spent on the slot's durable counters ('' record fields below: none).
-- ARGV: [1] now ms ('' = Redis TIME)  [2] at: the reservation's time ms (the reserving call's explicit now)
--       [3] counter count, then per counter 9 strings: <code> <key index> <quantity> <period ms> <capacity>
--       <calendar window start ms> <calendar window end ms> <cost> <record field ('' = not durable)>
-- What is given back is what the reservation added, where it still counts: a window that has ended keeps
-- nothing worth refunding; a sliding window counter's reserved amount may have rolled into "previous"; a
-- bucket is drained to now first; a log loses one entry of the reservation's time and cost. Never below 0.
local now = read_now(ARGV[1])
local at = tonumber(ARGV[2])
local records = KEYS[#KEYS]

local function window_refund(lim, cost, start, ends)
  if now >= ends then return end
  local st = window_load(lim, start)
  if st.start ~= start or st.used == 0 then return end
  st.used = max(0, st.used - cost)
  ALG[lim.code].save(st, lim, now)
end

local function swc_refund(lim, cost)
  local st = ALG.swc.load(lim, now)
  local reserved = at - at % lim.per
  if st.start == reserved then
    st.cur = max(0, st.cur - cost)
  elseif st.start == reserved + lim.per then
    st.prev = max(0, st.prev - cost)
  else
    return
  end
  ALG.swc.save(st, lim, now)
end

local function meter_refund(lim, cost)
  local st = ALG[lim.code].load(lim, now)
  st.level = max(0, st.level - cost * lim.per)
  ALG[lim.code].save(st, lim, now)
end

-- A log: one entry of the reservation's time and cost goes (entries alike are interchangeable), and the
-- running sum is worked out again from the set (a refund is rare; a set left empty goes with its sum).
local function log_refund(lim, cost)
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
    sum = sum + tonumber(match(all[i], ':(%d+)$'))
    seq = max(seq, tonumber(match(all[i], '^(%d+):')))
  end
  local summary = call('GET', lim.key2)
  if summary then seq = max(seq, tonumber(match(summary, '^%d+:(%d+):'))) end
  call('SET', lim.key2, format('%d:%d:%d:%d', sum, seq, tonumber(all[2]), tonumber(all[#all])), 'KEEPTTL')
end

local p = 4
for _ = 1, tonumber(ARGV[3]) do
  local code, key = ARGV[p], tonumber(ARGV[p + 1])
  if not ALG[code] then define(code) end
  local lim = {code = code, key = KEYS[key], key2 = code == 'sl' and KEYS[key + 1] or false,
    q = tonumber(ARGV[p + 2]), per = tonumber(ARGV[p + 3]), cap = tonumber(ARGV[p + 4]),
    ws = tonumber(ARGV[p + 5]), we = tonumber(ARGV[p + 6])}
  local cost, field = tonumber(ARGV[p + 7]), ARGV[p + 8]
  if code == 'fw' then
    local start = at - at % lim.per
    window_refund(lim, cost, start, start + lim.per)
  elseif code == 'cal' then
    window_refund(lim, cost, lim.ws, lim.we)
  elseif code == 'swc' then
    swc_refund(lim, cost)
  elseif code == 'tb' or code == 'lb' then
    meter_refund(lim, cost)
  elseif code == 'sl' then
    log_refund(lim, cost)
  end
  if field ~= '' then call('HINCRBY', records, field, -cost) end
  p = p + 9
end
return 1
