-- warm.lua: one chunk of the warm-up (apps/engine/store/warm.py): durable counters rebuilt from their records, each
-- written only while it is missing (a check that rebuilt or spent it first is never clobbered), then, when asked,
-- the mark that the epoch is warm (keys.py), with what is left of the epoch's TTL: they lapse together.
-- KEYS[1] the epoch, KEYS[2] the warm mark, then each counter's keys: one, or a sliding log's set and its sum.
-- ARGV[1] the epoch the warm-up began in; ARGV[2] '1': write the mark after the counters; then per counter
-- <kind> <ttl ms> <state> (store/seeds.py): kind 's' a string state; 'l' a sliding log "<time ms>:<cost>,..."
-- oldest first, written as check.lua's seeds phase writes one: the set (members "<seq>:<cost>", score the time)
-- and its sum "<sum>:<seq>:<oldest>:<newest>" (sliding_log.lua); 'a' a lease set's allocations "<member>,..." (ttl
-- 0), written as members held until released (score 2^53 - 1) and no TTL, as check.lua's seeds phase writes them.
-- Returns -1, having written nothing, when the epoch is not ARGV[1] any more (Redis lost its data again, or
-- counters_reconcile reset it: that epoch is warmed by the next run); else how many counters it wrote.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local written, k = 0, 3
for a = 3, #ARGV, 3 do
  local ttl, state = ARGV[a + 1], ARGV[a + 2]
  if ARGV[a] == 'l' then
    local set, sum = KEYS[k], KEYS[k + 1]
    k = k + 2
    if redis.call('EXISTS', set, sum) == 0 then
      local total, seq, oldest, newest = 0, 0, nil, nil
      for at, cost in string.gmatch(state, '(%d+):(%d+)') do
        seq = seq + 1
        redis.call('ZADD', set, at, seq .. ':' .. cost)
        total, oldest, newest = total + tonumber(cost), oldest or at, at
      end
      redis.call('PEXPIRE', set, ttl)
      redis.call('SET', sum, string.format('%d:%d:%s:%s', total, seq, oldest, newest), 'PX', ttl)
      written = written + 1
    end
  elseif ARGV[a] == 'a' then
    if redis.call('EXISTS', KEYS[k]) == 0 then
      for member in string.gmatch(state, '[^,]+') do redis.call('ZADD', KEYS[k], '9007199254740991', member) end
      written = written + 1
    end
    k = k + 1
  else
    if redis.call('SET', KEYS[k], state, 'NX', 'PX', ttl) then written = written + 1 end
    k = k + 1
  end
end
if ARGV[2] == '1' then
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 then redis.call('SET', KEYS[2], ARGV[1], 'PX', left) end
end
return written
