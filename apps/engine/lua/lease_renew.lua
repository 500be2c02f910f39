-- lease_renew.lua: extend a live lease, unless a session_time limit it counts against has no time left.
-- Assembled after lib.lua, the lease set's fragment and the session-time one (store/sessions.py: registry order).
-- KEYS[1] = the lease set, KEYS[2] = the lease's record (the lease set's fragment; absent for a lease taken
-- before records existed: renewed as before, with no session time).
-- ARGV[1] = member, ARGV[2] = ttl ms, ARGV[3] = now ms ('' = Redis TIME).
-- Logging (store/sessions.py): KEYS[3] = the log stream in the set's slot, ARGV[4] = instance, ARGV[5] = the
-- stream's cap; a renewal is logged ("renew"), and so is an expired lease found ("expire"). No KEYS[3]: no log.
-- Returns {1, new expiry ms}; {0, 0} when the lease expired or is unknown (it is not revived); {2, retry
-- after ms (-1 = never)} when an enforced session_time limit of the lease has spent its window: nothing moves.
-- Renewed, each session of the lease now ends at the new expiry, and usage books the change (the lease set's fragment).
-- An allocation (expiry 2^53 - 1) is not changed: renewing it answers its expiry (its set has no TTL, its record
-- keeps ALLOCATION_TTL_MS more).
local now = read_now(ARGV[3])
local member = ARGV[1]
local stream = KEYS[3]
if stream then log_setup(ARGV[5], ARGV[4], now) end
local score = call('ZSCORE', KEYS[1], member)
if not score then return {0, 0} end
local old = tonumber(score)
if old <= now then
  call('ZREM', KEYS[1], member)
  if stream then LOG.expire(stream, KEYS[1], member, old) end
  return {0, 0}
end
local record = ALG.cc.record(call('GET', KEYS[2]))
if old >= FOREVER then  -- an allocation stays one: renewing it only keeps its set and record
  call('PERSIST', KEYS[1])
  if record then call('PEXPIRE', KEYS[2], ttl(ALLOCATION_TTL_MS)) end
  if stream then LOG.lease(stream, 'renew', KEYS[1], member, old, record and LOG.operation(record.base) or '') end
  return {1, old}
end
local states = {}
if record then
  local refused, retry = false, 0
  for i, lim in ipairs(record.limits) do
    local st = ALG.st.load(lim, now)
    states[i] = st
    local ok, wait = ALG.st.eval(st, lim, now, 1)
    if not ok and not lim.shadow then
      refused = true
      if wait < 0 or retry < 0 then retry = -1 else retry = max(retry, wait) end
    end
  end
  if refused then return {2, retry} end
end
local expires = now + tonumber(ARGV[2])
call('ZADD', KEYS[1], 'XX', itos(expires), member)
local last = tonumber(call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
if last >= FOREVER then call('PERSIST', KEYS[1]) else call('PEXPIRE', KEYS[1], ttl(last - now)) end
if record then
  for i, lim in ipairs(record.limits) do
    ALG.st.hold(states[i], now, member, expires)
    ALG.st.save(states[i], lim, now)
  end
  call('PEXPIRE', KEYS[2], ttl(expires - now))
  if expires > old then
    ALG.cc.book(record.base, record.index, now, old, expires, 1)
  else
    ALG.cc.book(record.base, record.index, now, expires, old, -1)
  end
end
if stream then LOG.lease(stream, 'renew', KEYS[1], member, expires, record and LOG.operation(record.base) or '') end
return {1, expires}
