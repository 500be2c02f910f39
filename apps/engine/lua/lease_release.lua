-- lease_release.lua: give a lease back (idempotent). Assembled like lease_renew.lua.
-- KEYS[1] = the concurrency set, KEYS[2] = the lease's record; ARGV[1] = member, ARGV[2] = now ms ('' = Redis
-- TIME). A live lease's sessions end now (their time in the window stays spent)
-- and usage gives back what was booked after now; an expired one was counted up to its expiry already.
-- Logging (store/sessions.py): KEYS[3] = the log stream in the set's slot, ARGV[3] = instance, ARGV[4] = the
-- stream's cap; a live lease released is logged ("release"), an expired one found "expire". No KEYS[3]: no log.
-- Returns 1 when a live lease was released, else 0.
local now = read_now(ARGV[2])
local member = ARGV[1]
local score = call('ZSCORE', KEYS[1], member)
if not score then return 0 end
call('ZREM', KEYS[1], member)
local record = ALG.cc.record(call('GET', KEYS[2]))
if record then call('DEL', KEYS[2]) end
local old = tonumber(score)
if KEYS[3] then
  log_setup(ARGV[4], ARGV[3], now)
  if old <= now then
    LOG.expire(KEYS[3], KEYS[1], member, old)
  else
    LOG.lease(KEYS[3], 'release', KEYS[1], member, 0, record and LOG.operation(record.base) or '')
  end
end
if old <= now or not record then return old > now and 1 or 0 end
for _, lim in ipairs(record.limits) do
  local st = ALG.st.load(lim, now)
  ALG.st.close(st, now, member)
  ALG.st.save(st, lim, now)
end
if old < FOREVER then ALG.cc.book(record.base, record.index, now, now, old, -1) end  -- allocations are not booked
return 1
