-- hybrid_sync.lua: one instance's exchange for one hybrid counter (seed 004): store my counts, answer the
-- others' sums, in one atomic call. The reference model is quota_client.hybrid_store.MemoryPeers.exchange.
--
-- KEYS[1]: the counter's hash (tagged like the counter, so it lives in the counter's cluster slot). Fields:
--   <instance>  "<window start>:<count>:<previous window's count>:<seen at>:<base>:<base prev>" (bases: the
--               instance's count in its window / the window before when it first saw that window's floor; -1: none)
--   ~c:<w>      "<count>:<post>:<seen at>": what instances dropped from the bound had counted in window w (post:
--               of it, what they counted after their base); ~p:<w> the same for the window before w
--   ~f:<w>      "<amount>:<seeded at>": window w's floor, what the records (PostgreSQL) held of it after a loss
-- KEYS[2]: the store's epoch key (its slot's), when ARGV[11] is not '': set to now when missing, as check.lua does.
-- ARGV: [1] instance id  [2] my window start ms  [3] my previous window's start ms  [4] my count in the window
--       [5] my count in the previous window  [6] now ms ('' = Redis TIME)  [7] retention ms (an instance unseen
--       for longer is forgotten)  [8] the hash's TTL ms  [9] cap: the most one instance counts in a window (the
--       limit's quantity; counts above are taken as it)  [10] the most instances the hash keeps
--       [11] '' (not durable) | '?' (durable: ask for seeds when the store lost the counter) | '<floor>:<floor
--       prev>' (durable, the seeds: what the records hold of my window and of the one before)
-- With an audited limit (issue 17, apps/engine/decision_log.py) the exchange is also logged, in this call:
-- KEYS[#KEYS]: the decision log stream of the counter's hash tag (same slot); ARGV: [12] the stream's cap
--   (XADD MAXLEN ~)  [13] customer  [14] operation  [15] limit  [16] algorithm  [17] counter key
--   [18] quantity  [19] period ms  [20] sync interval ms  [21] shadow (1 / 0)
-- Returns {others' counts in my window, others' counts in my previous window (an instance still in that window
--   counts its current count there), live instances (me included), 1 when the store had nothing of mine (my
--   first exchange, or the store lost it: each instance finds that out on its own, whoever exchanged first)};
--   or {-2} when a durable counter was lost and the seeds are needed: nothing written but the epoch.
-- Counts are sent absolute, not as increments: a retried or timed-out exchange cannot count twice. Counts are
-- capped and sums saturate at 2^53 - 1 (a double holds it exactly; Redis would wrap a larger one).
-- Example (instance a, window 60000, 3 counted, cap 10, at most 256 instances, not durable):
--   EVAL "<this>" 1 q:h:{c=acct}:fw:hot:c=acct a 60000 0 3 0 61000 180000 300000 10 256 '' 0
local SATURATED = 9007199254740991
local EPOCH_TTL_MS = 604800000  -- check.lua's: the epoch key is one fact, whoever sets it
local function clamp(x) if x > SATURATED then return SATURATED elseif x < 0 then return 0 end return x end
local function itos(x) return string.format('%d', x) end

local now
if ARGV[6] ~= '' then
  now = tonumber(ARGV[6])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local me, start, prev_start = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local retention, cap, most = tonumber(ARGV[7]), tonumber(ARGV[9]), tonumber(ARGV[10])
local own = clamp(math.min(tonumber(ARGV[4]), cap))
local own_prev = clamp(math.min(tonumber(ARGV[5]), cap))
local seeding = ARGV[11]
local log_key = KEYS[seeding ~= '' and 3 or 2]

-- One pass over the hash: the live instances' sums (the answer), the dropped ones' sums and the floors (a few
-- fields). The bound needs another pass, only when a newcomer finds the counter full.
local function after(count, b) if b >= 0 then return math.max(0, count - b) end return 0 end
local fields = redis.call('HGETALL', KEYS[1])
local others, post, others_prev, post_prev, live = 0, 0, 0, 0, 1
local sums, floors, gone = {}, {}, {}
local mine, holds = nil, false
local match = string.match
for i = 1, #fields, 2 do
  local name, value = fields[i], fields[i + 1]
  if string.byte(name, 1) == 126 then  -- '~': the store's own fields
    local kind, w = match(name, '^~([cpf]):(%-?%d+)$')
    local a, b, at
    if kind == 'f' then a, at = match(value, '^(%d+):(%d+)$') elseif kind then a, b, at = match(value, '^(%d+):(%d+):(%d+)$') end
    at = tonumber(at)
    if not at or now - at > retention then
      gone[#gone + 1] = name  -- unreadable, or not seen within the retention
    else
      holds = true
      if kind == 'f' then floors[tonumber(w)] = {tonumber(a), at}
      else sums[name] = {kind, tonumber(w), tonumber(a), tonumber(b), at} end
    end
  else
    local w, c, cp, at, b, bp = match(value, '^(%-?%d+):(%d+):(%d+):(%d+):(%-?%d+):(%-?%d+)$')
    if not w then  -- a report written before bases were kept
      w, c, cp, at = match(value, '^(%-?%d+):(%d+):(%d+):(%d+)$')
      b, bp = -1, -1
    end
    at = tonumber(at)
    if not at then
      gone[#gone + 1] = name
    elseif name == me then
      holds = holds or now - at <= retention
      mine = {tonumber(w), tonumber(b)}
      mine[3] = tonumber(bp)
    elseif now - at > retention then
      gone[#gone + 1] = name
    else
      holds, live = true, live + 1
      w = tonumber(w)
      if w == start then
        c, cp = tonumber(c), tonumber(cp)
        others, others_prev = others + c, others_prev + cp
        if b ~= -1 and b ~= '-1' then post = post + after(c, tonumber(b)) end  -- a base: only after a loss
        if bp ~= -1 and bp ~= '-1' then post_prev = post_prev + after(cp, tonumber(bp)) end
      elseif w == prev_start then
        c = tonumber(c)
        others_prev = others_prev + c
        if b ~= -1 and b ~= '-1' then post_prev = post_prev + after(c, tonumber(b)) end
      end
    end
  end
end
for _, s in pairs(sums) do
  if s[1] == 'c' and s[2] == start then
    others, post = others + s[3], post + s[4]
  elseif (s[1] == 'c' and s[2] == prev_start) or (s[1] == 'p' and s[2] == start) then
    others_prev, post_prev = others_prev + s[3], post_prev + s[4]
  end
end

-- A durable counter the store lost (it holds nothing seen within the retention, and its epoch, the time the
-- store's data starts from, is after my previous window began): ask for the records' seeds, or take them.
local seeded = {}
if seeding ~= '' and not holds then
  local epoch = tonumber(redis.call('GET', KEYS[2]))
  if not epoch then
    epoch = now
    redis.call('SET', KEYS[2], itos(now), 'PX', EPOCH_TTL_MS)
  end
  if prev_start < epoch then
    if seeding == '?' then return {-2} end
    local floor, floor_prev = match(seeding, '^(%d+):(%d+)$')
    for _, seed in ipairs({{start, tonumber(floor)}, {prev_start, tonumber(floor_prev)}}) do
      local held = floors[seed[1]] and floors[seed[1]][1] or 0
      local amount = clamp(math.max(held, seed[2]))
      if amount > 0 then
        floors[seed[1]] = {amount, now}
        seeded[#seeded + 1] = seed[1]
      end
    end
  end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
for _, w in ipairs(seeded) do
  redis.call('HSET', KEYS[1], '~f:' .. itos(w), itos(floors[w][1]) .. ':' .. itos(now))
end

-- My bases: kept from my last report for the same window, else my count now.
local base, base_prev = -1, -1
if floors[start] then
  base = (mine and mine[1] == start and mine[2] >= 0) and mine[2] or own
end
if floors[prev_start] then
  if mine and mine[1] == start and mine[3] >= 0 then base_prev = mine[3]
  elseif mine and mine[1] == prev_start and mine[2] >= 0 then base_prev = mine[2]
  else base_prev = own_prev end
end
if floors[start] then others = math.max(others, floors[start][1] - base + post) end
if floors[prev_start] then others_prev = math.max(others_prev, floors[prev_start][1] - base_prev + post_prev) end

-- The bound: a newcomer past it drops the least recently seen (ties: by name, bytewise); their counts go to the
-- sums, which the answer above already holds (they counted as instances), so only `instances` changes.
if not mine and live > most then
  local seen_at, place, order = {}, {}, {}
  for i = 1, #fields, 2 do
    if string.byte(fields[i], 1) ~= 126 and fields[i] ~= me then
      local at = tonumber(match(fields[i + 1], '^%-?%d+:%d+:%d+:(%d+)'))
      if at and now - at <= retention then
        seen_at[#seen_at + 1], place[#place + 1] = at, i
        order[#order + 1] = #order + 1
      end
    end
  end
  table.sort(order, function(x, y)
    if seen_at[x] ~= seen_at[y] then return seen_at[x] < seen_at[y] end
    local a, b = fields[place[x]], fields[place[y]]  -- bytewise (Lua's < follows the server's locale)
    for k = 1, math.min(#a, #b) do
      local ca, cb = string.byte(a, k), string.byte(b, k)
      if ca ~= cb then return ca < cb end
    end
    return #a < #b
  end)
  local dropped = {}
  local function fold(kind, w, count, b)
    local name = '~' .. kind .. ':' .. itos(w)
    local held = sums[name] or {kind, w, 0, 0, now}
    if count + held[3] > 0 then
      sums[name] = {kind, w, clamp(held[3] + count), clamp(held[4] + after(count, b)), now}
      redis.call('HSET', KEYS[1], name, itos(sums[name][3]) .. ':' .. itos(sums[name][4]) .. ':' .. itos(now))
    end
  end
  for k = 1, live - most do
    local i = place[order[k]]
    local w, c, cp, _, b, bp = match(fields[i + 1], '^(%-?%d+):(%d+):(%d+):(%d+):(%-?%d+):(%-?%d+)$')
    if not w then w, c, cp = match(fields[i + 1], '^(%-?%d+):(%d+):(%d+):'); b, bp = -1, -1 end
    fold('c', tonumber(w), tonumber(c), tonumber(b))
    fold('p', tonumber(w), tonumber(cp), tonumber(bp))
    dropped[#dropped + 1] = fields[i]
  end
  redis.call('HDEL', KEYS[1], unpack(dropped))
  live = most
end

redis.call('HSET', KEYS[1], me, string.format('%d:%d:%d:%d:%d:%d', start, own, own_prev, now, base, base_prev))
redis.call('PEXPIRE', KEYS[1], ARGV[8])
if ARGV[12] then  -- a `sync` entry: what this instance reported, as the store took it (decision_log.py)
  redis.call('XADD', log_key, 'MAXLEN', '~', ARGV[12], '*', 't', itos(now), 'e', 'sync',
    'c', ARGV[13], 'o', ARGV[14], 'l', ARGV[15], 'a', ARGV[16], 'k', ARGV[17], 'q', ARGV[18], 'p', ARGV[19],
    'w', ARGV[2], 'n', itos(own), 'u', ARGV[3], 'v', itos(own_prev), 'y', ARGV[20], 'g', ARGV[21], 'm', 'hybrid',
    'i', me)
  redis.call('PEXPIRE', log_key, '172800000')  -- two days after its last entry, like the other log streams
end
return {clamp(others), clamp(others_prev), live, mine and 0 or 1}
