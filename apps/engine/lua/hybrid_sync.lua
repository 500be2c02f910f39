-- hybrid_sync.lua: one instance's exchange for one hybrid counter (seed 004): store my counts, answer the
-- others' sums, in one atomic call. The reference model is quota_client.hybrid.MemoryPeers.exchange.
--
-- KEYS[1]: the counter's hash (tagged like the counter, so it lives in the counter's cluster slot); one field
--   per instance: "<window start ms>:<count>:<previous window's count>:<seen at ms>".
-- ARGV: [1] instance id  [2] my window start ms  [3] my previous window's start ms  [4] my count in the window
--       [5] my count in the previous window  [6] now ms ('' = Redis TIME)  [7] retention ms (an instance unseen
--       for longer is forgotten)  [8] the hash's TTL ms
-- With an audited limit (issue 17, apps/engine/decision_log.py) the exchange is also logged, in this call:
-- KEYS[2]: the decision log stream of the counter's hash tag (same slot); ARGV: [9] the stream's cap
--   (XADD MAXLEN ~)  [10] customer  [11] operation  [12] limit  [13] algorithm  [14] counter key
--   [15] quantity  [16] period ms  [17] sync interval ms  [18] shadow (1 / 0)
-- Returns {others' counts in my window, others' counts in my previous window (an instance still in that window
--   counts its current count there), live instances (me included), 1 when the store had nothing of mine (my
--   first exchange, or the store lost it: each instance finds that out on its own, whoever exchanged first)}.
-- Counts are sent absolute, not as increments: a retried or timed-out exchange cannot count twice.
local now
if ARGV[6] ~= '' then
  now = tonumber(ARGV[6])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local me, start, prev_start = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local retention = tonumber(ARGV[7])
local fields = redis.call('HGETALL', KEYS[1])
local fresh = true
local others, others_prev, live, gone = 0, 0, 1, {}
for i = 1, #fields, 2 do
  local name = fields[i]
  if name == me then
    fresh = false
  else
    local window, count, count_prev, seen = string.match(fields[i + 1], '^(%-?%d+):(%d+):(%d+):(%d+)$')
    window, seen = tonumber(window), tonumber(seen)
    if now - seen > retention then
      gone[#gone + 1] = name
    else
      live = live + 1
      if window == start then
        others = others + tonumber(count)
        others_prev = others_prev + tonumber(count_prev)
      elseif window == prev_start then
        others_prev = others_prev + tonumber(count)
      end
    end
  end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
redis.call('HSET', KEYS[1], me, string.format('%d:%d:%d:%d', start, tonumber(ARGV[4]), tonumber(ARGV[5]), now))
redis.call('PEXPIRE', KEYS[1], ARGV[8])
if KEYS[2] then  -- a `sync` entry: what this instance reported, as the store took it (decision_log.py)
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[9], '*', 't', string.format('%d', now), 'e', 'sync',
    'c', ARGV[10], 'o', ARGV[11], 'l', ARGV[12], 'a', ARGV[13], 'k', ARGV[14], 'q', ARGV[15], 'p', ARGV[16],
    'w', ARGV[2], 'n', ARGV[4], 'u', ARGV[3], 'v', ARGV[5], 'y', ARGV[17], 'g', ARGV[18], 'm', 'hybrid', 'i', me)
  redis.call('PEXPIRE', KEYS[2], '172800000')  -- two days after its last entry, like the other log streams
end
return {others, others_prev, live, fresh and 1 or 0}
