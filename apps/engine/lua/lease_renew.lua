-- lease_renew.lua: extend a live lease.
-- KEYS[1] = the concurrency set; ARGV[1] = member, ARGV[2] = ttl ms, ARGV[3] = now ms ('' = Redis TIME).
-- Returns the new expiry in ms, or -1 when the lease expired or is unknown (it is not revived).
local now = read_now(ARGV[3])
local score = call('ZSCORE', KEYS[1], ARGV[1])
if not score then return -1 end
if tonumber(score) <= now then
  call('ZREM', KEYS[1], ARGV[1])
  return -1
end
local expires = now + tonumber(ARGV[2])
call('ZADD', KEYS[1], 'XX', itos(expires), ARGV[1])
local last = tonumber(call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
call('PEXPIRE', KEYS[1], ttl(last - now))
return expires
