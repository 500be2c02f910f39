-- hybrid_sync.lua: one instance's exchange for one hybrid counter (seed 004): store my counts, answer the
-- others' sums, in one atomic call. The reference model is quota_client.hybrid.MemoryPeers.exchange.
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

-- Read the hash: instances, dropped instances' sums, floors.
local fields = redis.call('HGETALL', KEYS[1])
local entries, sums, floors, gone = {}, {}, {}, {}
local mine, holds = nil, false
for i = 1, #fields, 2 do
  local name, value = fields[i], fields[i + 1]
  local seen
  local kind, w = string.match(name, '^~([cpf]):(%-?%d+)$')
  if kind == 'f' then
    local amount, at = string.match(value, '^(%d+):(%d+)$')
    if amount then seen = tonumber(at); floors[tonumber(w)] = {tonumber(amount), seen} end
  elseif kind then
    local count, post, at = string.match(value, '^(%d+):(%d+):(%d+)$')
    if count then seen = tonumber(at); sums[name] = {kind, tonumber(w), tonumber(count), tonumber(post), seen} end
  elseif string.sub(name, 1, 1) ~= '~' then
    local wstart, count, count_prev, at, base, base_prev =
      string.match(value, '^(%-?%d+):(%d+):(%d+):(%d+):(%-?%d+):(%-?%d+)$')
    if not wstart then  -- a report written before bases were kept
      wstart, count, count_prev, at = string.match(value, '^(%-?%d+):(%d+):(%d+):(%d+)$')
      base, base_prev = -1, -1
    end
    if wstart then
      seen = tonumber(at)
      local e = {tonumber(wstart), tonumber(count), tonumber(count_prev), seen, tonumber(base), tonumber(base_prev)}
      if name == me then mine = e else entries[#entries + 1] = {name, e} end
    end
  end
  if seen == nil then
    gone[#gone + 1] = name  -- unreadable: nobody's report
  elseif now - seen <= retention then
    holds = true
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
    local floor, floor_prev = string.match(seeding, '^(%d+):(%d+)$')
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

-- Forget what was not seen within the retention (my own report is rewritten below).
local kept = {}
for _, item in ipairs(entries) do
  if now - item[2][4] > retention then gone[#gone + 1] = item[1] else kept[#kept + 1] = item end
end
entries = kept
for name, s in pairs(sums) do
  if now - s[5] > retention then gone[#gone + 1] = name; sums[name] = nil end
end
for w, f in pairs(floors) do
  if now - f[2] > retention then gone[#gone + 1] = '~f:' .. itos(w); floors[w] = nil end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
for _, w in ipairs(seeded) do
  redis.call('HSET', KEYS[1], '~f:' .. itos(w), itos(floors[w][1]) .. ':' .. itos(now))
end

-- My bases: kept from my last report for the same window, else my count now.
local base, base_prev = -1, -1
if floors[start] then
  base = (mine and mine[1] == start and mine[5] >= 0) and mine[5] or own
end
if floors[prev_start] then
  if mine and mine[1] == start and mine[6] >= 0 then base_prev = mine[6]
  elseif mine and mine[1] == prev_start and mine[5] >= 0 then base_prev = mine[5]
  else base_prev = own_prev end
end

-- The bound: a newcomer past it drops the least recently seen (ties: by name, bytewise), whose counts go to the
-- sums, so no answer but `instances` changes.
local function after(count, b) if b >= 0 then return math.max(0, count - b) end return 0 end
local function fold(kind, w, count, b)
  local name = '~' .. kind .. ':' .. itos(w)
  local s = sums[name] or {kind, w, 0, 0, now}
  if count + s[3] > 0 then
    sums[name] = {kind, w, clamp(s[3] + count), clamp(s[4] + after(count, b)), now}
    redis.call('HSET', KEYS[1], name, itos(sums[name][3]) .. ':' .. itos(sums[name][4]) .. ':' .. itos(now))
  end
end
local function before(x, y)
  if x[2][4] ~= y[2][4] then return x[2][4] < y[2][4] end
  local a, b = x[1], y[1]
  for i = 1, math.min(#a, #b) do
    local ca, cb = string.byte(a, i), string.byte(b, i)
    if ca ~= cb then return ca < cb end
  end
  return #a < #b
end
if not mine and #entries + 1 > most then
  table.sort(entries, before)
  local excess, dropped, rest = #entries + 1 - most, {}, {}
  for i, item in ipairs(entries) do
    if i <= excess then
      local e = item[2]
      fold('c', e[1], e[2], e[5])
      fold('p', e[1], e[3], e[6])
      dropped[#dropped + 1] = item[1]
    else
      rest[#rest + 1] = item
    end
  end
  entries = rest
  redis.call('HDEL', KEYS[1], unpack(dropped))
end

-- The others' sums, and the floors' lower bound.
local others, post, others_prev, post_prev, live = 0, 0, 0, 0, 1
for _, item in ipairs(entries) do
  local e = item[2]
  live = live + 1
  if e[1] == start then
    others, others_prev = others + e[2], others_prev + e[3]
    post, post_prev = post + after(e[2], e[5]), post_prev + after(e[3], e[6])
  elseif e[1] == prev_start then
    others_prev, post_prev = others_prev + e[2], post_prev + after(e[2], e[5])
  end
end
for _, s in pairs(sums) do
  if s[1] == 'c' and s[2] == start then
    others, post = others + s[3], post + s[4]
  elseif (s[1] == 'c' and s[2] == prev_start) or (s[1] == 'p' and s[2] == start) then
    others_prev, post_prev = others_prev + s[3], post_prev + s[4]
  end
end
if floors[start] then others = math.max(others, floors[start][1] - base + post) end
if floors[prev_start] then others_prev = math.max(others_prev, floors[prev_start][1] - base_prev + post_prev) end

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
