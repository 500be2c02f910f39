-- name_admit.lua: may a caller bring in these new names today? Atomic, one round trip for all of them.
-- KEYS[1] the caller's set of names admitted this UTC day ("<prefix>:n:{s=<service>}:<day>")
-- ARGV[1] how many names a day  ARGV[2] the set's TTL in ms  ARGV[3..] the names ("<kind>:<name>")
-- Returns one number per name, in order: 1 admitted (before, or now), 0 the day's budget is spent.
local per_day, out, added = tonumber(ARGV[1]), {}, false
local count = redis.call('SCARD', KEYS[1])
for i = 3, #ARGV do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 1 then
    out[#out + 1] = 1
  elseif count < per_day then
    redis.call('SADD', KEYS[1], ARGV[i])
    count, added = count + 1, true
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if added then redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2])) end
return out
