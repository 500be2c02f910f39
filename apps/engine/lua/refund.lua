-- refund.lua: give back what check.lua spent on counters of one cluster slot for a check that another slot
-- then refused (apps/engine/store/cluster/store.py reserves slot by slot and refunds on rejection). Assembled
-- after lib.lua and the algorithm fragments, like check.lua; every key is in one slot.
--
-- KEYS: per counter its key (a sliding log: then its sum key); a counter may come more than once (each item of an
--   atomic batch that spent on it, store/atomic_slots.py). No records to give back: the caller tallies a
--   check's records only once it is decided (apps/engine/decision_usage.py), and a refunded check is refused.
-- ARGV: [1] now ms ('' = Redis TIME)  [2] at: the reservation's time ms (the reserving call's explicit now)
--       [3] counter count, then per counter 8 strings: <code> <key index> <quantity> <period ms> <capacity>
--       <calendar window start ms> <calendar window end ms> <cost>
-- What is given back is what the reservation added, where it still counts (never below 0): each algorithm's
-- fragment defines ALG.<code>.refund(lim, cost, at, now); one without it fails loudly (the registry refuses an
-- entry that declares a refund its fragments do not define).
local now = read_now(ARGV[1])
local at = tonumber(ARGV[2])

local p = 4
for _ = 1, tonumber(ARGV[3]) do
  local code, key = ARGV[p], tonumber(ARGV[p + 1])
  if not ALG[code] then define(code) end
  local lim = {code = code, key = KEYS[key], key2 = code == 'sl' and KEYS[key + 1] or false,
    q = tonumber(ARGV[p + 2]), per = tonumber(ARGV[p + 3]), cap = tonumber(ARGV[p + 4]),
    ws = tonumber(ARGV[p + 5]), we = tonumber(ARGV[p + 6])}
  local cost = tonumber(ARGV[p + 7])
  local refund = ALG[code].refund
  if not refund then error('refund.lua: algorithm ' .. code .. ' defines no refund (apps/engine/registry.py)') end
  refund(lim, cost, at, now)
  -- Read again by the next refund of the same counter (several items of an atomic batch spent on it): lib.lua's
  -- fetch keeps what it read for the rest of the call.
  FETCHED[lim.key] = nil
  if lim.key2 then FETCHED[lim.key2] = nil end
  p = p + 8
end
return 1
