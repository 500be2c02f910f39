-- shape.lua: checks of one shape (apps/engine/store/script/shapes.py), the common case made cheap: the limits'
-- algorithms are plain counters (no leases, shapers or second keys), nothing is audited, and no check has a request
-- id or is a dry run; a batch is independent (not atomic). Only the shape's fragments are assembled before it, so a
-- call creates only the functions it uses; and it writes nothing but its counters (usage is tallied by the process
-- that decided). check.lua serves every other check and batch, and decides exactly as this does
-- (tests/engine/test_shapes.py). A single check is a batch of one item.
--
-- Assembled after lib.lua, lookback.lua (durable shapes), the shape's fragments and a generated header:
--   local SHAPE = {{code, rebuilt 0|1, offset in an item's numbers, zoned 0|1}, ...}   per limit, in the check's order
--   local ITEM_NUMBERS = <how many numbers each item sends>
--   local REBUILDS = true|false  a counter of the shape may have been lost with Redis's data (a durable limit, and
--                                the store rebuilds them): then KEYS ends with the warm mark and the epoch key
-- KEYS: per item, its limits' counter keys in order [, then the warm mark and the epoch key, as check.lua's keys
--   end (keys.py)]. Items may share keys.
-- ARGV: [1] now ms ('' = Redis TIME) [2] the numbers, little-endian doubles (struct.unpack reads them; a text form
--   costs a strtod per number, ~15% of a single check): per limit its quantity, period ms, capacity and shadow 0|1;
--   then per item, per limit: its cost, and for a calendar limit its four window bounds (the window holding now is
--   picked here, as check.lua does).
-- Answer: one row per item, as check.lua's ({allowed, retry | delay, 0, 0, (over, remaining, reset ms)*}), then
--   the script's now (the caller tallies usage in its minute and records in its buckets); or
--   {{HANDOVER}} when a durable counter is missing that may have been lost with Redis's data (no epoch, or an
--   epoch the warm-up has not marked complete and the counter's look-back began before it): nothing was written,
--   and the caller asks check.lua, which rebuilds it (and sets the epoch).
local now = read_now(ARGV[1], CALL_TIME)  -- CALL_TIME: the deadline prologue's (deadline.lua)
local count = #SHAPE
local CONSTANTS = 4 * count
local items = (#ARGV[2] / 8 - CONSTANTS) / ITEM_NUMBERS
local total = CONSTANTS + items * ITEM_NUMBERS
local N
if total <= 500 then  -- a check or a small batch: one unpack into one table (filling a table grows it: rehashes)
  N = {struct.unpack('<' .. string.rep('d', total), ARGV[2])}
  N[total + 1] = nil  -- unpack's last value is where it stopped reading
else  -- in slices: one unpack returns them all on Lua's stack, which holds 8,000 at most
  N = {}
  local pos = 1
  for first = 1, total, 500 do
    local last = math.min(first + 499, total)
    local slice = {struct.unpack('<' .. string.rep('d', last - first + 1), ARGV[2], pos)}
    pos = slice[#slice]
    for n = first, last do N[n] = slice[n - first + 1] end
  end
end

-- The limits of each item: plain fragments read code, key, q, per, cap, shadow, and ws/we for calendar windows (every
-- field in the constructor: one added later grows the table). Items naming the same key share its state.
local cache, loaded = {}, {}
prefetch(KEYS)
local function limit_of(i, j)
  local s, c = SHAPE[j], 4 * (j - 1)
  local lim = {code = s[1], key = KEYS[(i - 1) * count + j], q = N[c + 1], per = N[c + 2], cap = N[c + 3],
    shadow = N[c + 4] == 1, ws = false, we = false}
  if s[4] == 1 then  -- calendar windows: the one holding now
    local at = CONSTANTS + (i - 1) * ITEM_NUMBERS + s[3] + 1
    local b = at
    while b < at + 2 and N[b + 1] <= now do b = b + 1 end
    lim.ws, lim.we = N[b], N[b + 1]
  end
  return lim
end

local epoch = REBUILDS and tonumber(FETCHED[KEYS[#KEYS]])
if REBUILDS and not (epoch and FETCHED[KEYS[#KEYS - 1]]) then  -- the mark counts only with its epoch, as in check.lua
  for i = 1, items do
    for j = 1, count do
      if SHAPE[j][2] == 1 then
        local lim = limit_of(i, j)
        if not FETCHED[lim.key] and (not epoch or lookback(lim, now) < epoch) then return {{HANDOVER}} end
      end
    end
  end
end

local out = {}
for i = 1, items do
  local row
  if count == 3 then
    row = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
  else
    row = {1, 0, 0, 0}
  end
  -- Sized for four limits in their constructors: filling an empty table grows it step by step (~2% of a check).
  local lims, states, costs = {false, false, false, false}, {false, false, false, false}, {0, 0, 0, 0}
  local allowed, retry, never = true, 0, false
  local base = CONSTANTS + (i - 1) * ITEM_NUMBERS
  for j = 1, count do
    local key, lim = KEYS[(i - 1) * count + j], nil
    local st = cache[key]
    if st then
      lim = st.lim  -- a counter an earlier item named: its definition is that item's (calendar window included)
    else
      lim = limit_of(i, j)
      st = ALG[lim.code].load(lim, now)
      cache[key] = st
      loaded[#loaded + 1] = st
    end
    local alg, cost = ALG[lim.code], N[base + SHAPE[j][3]]
    lims[j], states[j], costs[j] = lim, st, cost
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
    end
    row[3 * j + 3], row[3 * j + 4] = alg.report(st, lim, now)
  end
  out[i] = row
end
for _, st in ipairs(loaded) do
  if st.dirty then ALG[st.lim.code].save(st, st.lim, now) end
end
out[items + 1] = now
return out
