-- shape.lua: one check of one shape (apps/engine/store/script/shapes.py), the common case made cheap: the limits'
-- algorithms are plain counters (no leases, shapers or second keys), nothing is audited, and the check has no
-- request id and is not a dry run. Only the shape's fragments are assembled before it, so a call creates only the
-- functions it uses; and it writes nothing but its counters (usage is tallied by the process that decided).
-- check.lua serves every other check and batch, and decides exactly as this does (tests/engine/store/test_shapes.py).
--
-- Assembled after lib.lua, lookback.lua (durable shapes), the shape's fragments and a generated header:
--   local SHAPE = {{code, rebuilt 0|1, first number's index, zoned 0|1}, ...}   one per limit, in the check's order
--   local PACKED = '<dd...d'   the struct format of the numbers (one 'd' per number)
--   local REBUILDS = true|false  a counter of the shape may have been lost with Redis's data (a durable limit, and
--                                the store rebuilds them): then KEYS ends with the epoch key and the warm key
-- KEYS: the limits' counter keys in order [, epoch key, warm key].
-- ARGV: [1] now ms ('' = Redis TIME) [2] the numbers, little-endian doubles (struct.unpack reads them all at once;
--   a text form costs a strtod per number, ~15% of the call): per limit from its index, quantity, period ms,
--   capacity, shadow 0|1, cost, and for a calendar limit its four window bounds (the window holding now is picked
--   here, as check.lua does).
-- Answer: {row}, row as check.lua's ({allowed, retry | delay, 0, 0, (over, remaining, reset ms)*}); or {{HANDOVER}}
--   when a durable counter is missing that may have been lost with Redis's data (no warm key: the warm-up has not
--   marked this epoch complete, and the counter's look-back began before the epoch or there is no epoch): nothing
--   was written, and the caller asks check.lua, which rebuilds it.
local now = read_now(ARGV[1])
local N = {struct.unpack(PACKED, ARGV[2])}
local count = #SHAPE
local lims, keys = {}, {}
for j = 1, count do
  local s = SHAPE[j]
  local at = s[3]
  -- The fields plain fragments read, every one in the constructor (a field added later grows the table).
  local lim = {code = s[1], key = KEYS[j], q = N[at], per = N[at + 1], cap = N[at + 2], shadow = N[at + 3] == 1,
    ws = false, we = false}
  if s[4] == 1 then  -- calendar windows: the one holding now
    local i = at + 5
    while i < at + 7 and N[i + 1] <= now do i = i + 1 end
    lim.ws, lim.we = N[i], N[i + 1]
  end
  lims[j], keys[j] = lim, lim.key
end
if REBUILDS then
  keys[count + 1], keys[count + 2] = KEYS[count + 1], KEYS[count + 2]
end
prefetch(keys)

if REBUILDS and not FETCHED[KEYS[count + 2]] then
  local epoch = tonumber(FETCHED[KEYS[count + 1]])
  for j = 1, count do
    local lim = lims[j]
    if SHAPE[j][2] == 1 and not FETCHED[lim.key] and (not epoch or lookback(lim, now) < epoch) then
      return {{HANDOVER}}
    end
  end
end

local row
if count == 3 then
  row = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
else
  row = {1, 0, 0, 0}
end
local states, costs = {}, {}
local allowed, retry, never = true, 0, false
for j = 1, count do
  local lim = lims[j]
  local alg, cost = ALG[lim.code], N[SHAPE[j][3] + 4]
  local st = alg.load(lim, now)
  states[j], costs[j] = st, cost
  local ok, wait = true, 0
  if cost > 0 then ok, wait = alg.eval(st, lim, now, cost) end
  if ok then
    row[3 * j + 2] = 0
  else
    row[3 * j + 2] = 1
    if not lim.shadow then
      allowed = false
      if wait < 0 then never = true elseif wait > retry then retry = wait end
    end
  end
end
if not allowed then row[1], row[2] = 0, never and -1 or retry end
for j = 1, count do
  local lim, st = lims[j], states[j]
  local alg = ALG[lim.code]
  -- A shadow limit that would refuse spends nothing; a refused check spends nowhere.
  if allowed and costs[j] > 0 and row[3 * j + 2] == 0 then
    alg.apply(st, lim, now, costs[j])
    alg.save(st, lim, now)
  end
  row[3 * j + 3], row[3 * j + 4] = alg.report(st, lim, now)
end
return {row}
