-- hybrid_usage.lua: what a /api/v1/sync request adds to usage, in one atomic call: the SDK limiter's usage report
-- (counted once per report id) and what its counters grew by, so every admission a counter reports is in usage
-- even when no report describes it. The reference model is apps/engine/hybrid_usage.py (UsageBalances).
--
-- KEYS[1]: the instance's balance hash (tagged by its customer). Fields, names percent-encoded by the caller:
--   r:<unit>          what its usage reports added of the unit, in all (first arrivals only)
--   g:<unit>:<limit>  what the counters of the limit grew by, in all (absolute counts: a retry grows nothing)
--   u:<unit>          what was added to usage of the unit so far: the largest of the above (so nothing twice)
--   m:<limit>         "<window start>=<highest count reported>,..." for the limit's latest MARKS windows
-- KEYS[2]: the report's id key (only when the request carries a report): SET NX, so a resend counts nothing.
-- ARGV: [1] TTL ms of both keys  [2] n, the report's units, then n pairs <unit> <amount>  then m, the counters,
--   then m groups <limit> <unit> <window start> <count> <previous window start> <previous count>
-- Returns {1 when the report was counted now (0: a resend, or none), k, then k pairs <unit> <amount to add to
--   usage>, then triples <counter number from 0> <window start> <what the counter grew by in that window>}.
-- Example (report 3 requests, counter "hot" at 5 in window 60000):
--   EVAL "<this>" 2 q:sb:{c=acct}:sdk%3Ai q:sr:{c=acct}:sdk%3Ai:1 86400000 1 requests 3 1 hot requests 60000 5 0 0 0
local SATURATED = 9007199254740991
local MARKS = 4
local function clamp(x) if x > SATURATED then return SATURATED elseif x < 0 then return 0 end return x end
local function itos(x) return string.format('%d', x) end
local balance, ttl = KEYS[1], ARGV[1]
local function number(field) return tonumber(redis.call('HGET', balance, field)) or 0 end

local units, grown = {}, {}  -- units whose usage may grow, in first-touched order; the growths seen per unit
local function touch(unit, value)
  if not grown[unit] then units[#units + 1] = unit; grown[unit] = {} end
  if value then grown[unit][#grown[unit] + 1] = value end
end

local at = 2
local report = {}
for _ = 1, tonumber(ARGV[at]) do
  report[#report + 1] = {ARGV[at + 1], tonumber(ARGV[at + 2])}
  at = at + 2
end
at = at + 1
local first = 0
if KEYS[2] and redis.call('SET', KEYS[2], '1', 'NX', 'PX', ttl) then
  first = 1
  for _, pair in ipairs(report) do
    redis.call('HSET', balance, 'r:' .. pair[1], itos(clamp(number('r:' .. pair[1]) + pair[2])))
    touch(pair[1])
  end
end

local growth = {}
for k = 1, tonumber(ARGV[at]) do
  local limit, unit = ARGV[at + 1], ARGV[at + 2]
  local counts = {{tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4])}, {tonumber(ARGV[at + 5]), tonumber(ARGV[at + 6])}}
  at = at + 6
  local marks = {}
  for w, c in string.gmatch(redis.call('HGET', balance, 'm:' .. limit) or '', '(%-?%d+)=(%d+)') do
    marks[#marks + 1] = {tonumber(w), tonumber(c)}
  end
  local grew = 0
  for _, pair in ipairs(counts) do
    local mark
    for _, m in ipairs(marks) do if m[1] == pair[1] then mark = m end end
    local before = mark and mark[2] or 0
    if pair[2] > before then
      grew = grew + pair[2] - before
      growth[#growth + 1] = k - 1
      growth[#growth + 1] = pair[1]
      growth[#growth + 1] = pair[2] - before
      if mark then mark[2] = pair[2] else marks[#marks + 1] = {pair[1], pair[2]} end
    end
  end
  if grew > 0 then
    table.sort(marks, function(x, y) return x[1] > y[1] end)
    local kept = {}
    for i = 1, math.min(#marks, MARKS) do kept[i] = itos(marks[i][1]) .. '=' .. itos(marks[i][2]) end
    redis.call('HSET', balance, 'm:' .. limit, table.concat(kept, ','))
    local g = clamp(number('g:' .. unit .. ':' .. limit) + grew)
    redis.call('HSET', balance, 'g:' .. unit .. ':' .. limit, itos(g))
    touch(unit, g)
  end
end

local answer = {first, 0}
for _, unit in ipairs(units) do
  local top = number('r:' .. unit)
  for _, g in ipairs(grown[unit]) do if g > top then top = g end end
  local before = number('u:' .. unit)
  if top > before then
    redis.call('HSET', balance, 'u:' .. unit, itos(top))
    answer[#answer + 1] = unit
    answer[#answer + 1] = top - before
    answer[2] = answer[2] + 1
  end
end
if redis.call('EXISTS', balance) == 1 then redis.call('PEXPIRE', balance, ttl) end
for _, value in ipairs(growth) do answer[#answer + 1] = value end
return answer
