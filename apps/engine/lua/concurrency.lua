-- concurrency.lua: KEYS[lim.key] = sorted set of leases, member "<b64 customer>.<random>",
-- score = expiry ms; a lease counts while its expiry > now. TTL until the last lease expires.
-- A check without a lease only looks (is a slot free?); lease_acquire passes the lease's payload
-- "<member>\n<record key>\n<record body>" (store/sessions.py): the member is held in the set, and the lease's
-- record ("<start ms>\n<usage index base>\n<record body>", TTL until the lease expires) is written for renewing and releasing it.
-- Session time in usage: a lease's whole lifetime is booked when it is granted, in the usage hash of each UTC
-- minute it spans ("session_ms"); renewing books the extension (or gives back a shortening) and releasing
-- gives back what was booked after now. An expired lease needs nothing: it was booked up to its expiry. Only
-- minutes from now on move, so a flushed minute is never written again.
-- The decision log (lib.lua's LOG): saving a set that holds a new lease first logs the leases it drops as
-- expired ("expire"), when check.lua gave the definition its stream (lim.log).
-- Allocations (reference/concurrency.py): a lease acquired with ttl 0 never expires (score FOREVER), is never
-- booked as session time, and a set holding one has no TTL (PERSIST): it lapses only once its last allocation is
-- released (its record keeps ALLOCATION_TTL_MS after its last write: releasing works without it). The service's
-- PostgreSQL keeps the allocations too (apps/enforcement/leases/durable.py), and check.lua rebuilds a missing set
-- from them after a Redis loss. A slot held by an allocation frees only on release: eval answers -1 (never) when
-- that is what it waits for.
ALG.cc = {}
-- A renew or release of lease `member` on the set `key` (operation: from its record, '' without), logged by
-- lease_renew.lua and lease_release.lua once log_setup (lib.lua) has defined LOG's writers.
function LOG.lease(stream, event, key, member, expires, operation)
  LOG.add(stream, 'e', event, 'c', LOG.unb64(match(member, '^[^.]*')), 'o', operation,
    'l', LOG.unquote(match(key, '}:cc:([^:]*)') or ''), 'a', 'concurrency', 'k', key, 's', member, 'x', itos(expires),
    'm', 'exact', 'i', LOG.instance)
end
local USAGE_KEEP_MS = 172800000  -- as check.lua's USAGE_TTL_MS, counted from the end of the booked minute
local FOREVER = 9007199254740991  -- reference/concurrency.FOREVER (2^53 - 1, exact as a double)
local FOREVER_TEXT = '9007199254740991'
local ALLOCATION_TTL_MS = 604800000  -- keys.ALLOCATION_TTL_MS

-- Add sign * (the part of [from, to) in each minute) to the minutes' usage at `base` (index: "<prefix>:ui:").
function ALG.cc.book(base, index, now, from, to, sign)
  local minute = floor(from / 60000)
  while minute * 60000 < to do
    local low, high = max(from, minute * 60000), math.min(to, minute * 60000 + 60000)
    if high > low then
      local key, set, keep = base .. itos(minute), index .. itos(minute), itos(minute * 60000 + 60000 - now + USAGE_KEEP_MS)
      call('HINCRBY', key, 'session_ms', itos(sign * (high - low)))
      call('SADD', set, key)
      call('PEXPIRE', key, keep)
      call('PEXPIRE', set, keep)
    end
    minute = minute + 1
  end
end

-- A lease record "<start>\n<usage index base>\n<usage base>\n(<session_time key>\n<seconds>\n<period ms>\n
-- <shadow 0|1>\n)*" as {start, index, base, limits = {lim-like tables for the session-time fragment}}, or nil.
function ALG.cc.record(text)
  if not text then return nil end
  local fields = {}
  for line in string.gmatch(text, '[^\n]+') do fields[#fields + 1] = line end
  local record = {start = tonumber(fields[1]), index = fields[2], base = fields[3], limits = {}}
  for i = 4, #fields - 3, 4 do
    record.limits[#record.limits + 1] = {key = fields[i], q = tonumber(fields[i + 1]), per = tonumber(fields[i + 2]),
      shadow = fields[i + 3] == '1'}
  end
  return record
end

-- newest: the latest expiry among the leases that expire (nil: none); forever: the set holds an allocation.
function ALG.cc.load(lim, now)
  local st = {count = call('ZCOUNT', lim.key, '(' .. itos(now), '+inf'), newest = nil, forever = false,
    pending = {}, lim = lim, dirty = false}
  if st.count > 0 then
    st.newest = tonumber(call('ZRANGE', lim.key, -1, -1, 'WITHSCORES')[2])
    if st.newest >= FOREVER then
      st.forever = true
      local expiring = call('ZREVRANGEBYSCORE', lim.key, '(' .. FOREVER_TEXT, '(' .. itos(now), 'WITHSCORES', 'LIMIT', 0, 1)
      st.newest = expiring[2] and tonumber(expiring[2]) or nil
    end
  end
  return st
end

function ALG.cc.eval(st, lim, now, cost)
  if lim.q < 1 then return false, -1 end
  if st.count + 1 <= lim.q then return true, 0 end
  local k = st.count - lim.q + 1
  local expiries = {}
  local held = call('ZRANGEBYSCORE', lim.key, '(' .. itos(now), '+inf', 'WITHSCORES', 'LIMIT', 0, k)
  for i = 2, #held, 2 do expiries[#expiries + 1] = tonumber(held[i]) end
  for _, lease in ipairs(st.pending) do expiries[#expiries + 1] = lease[1] end
  table.sort(expiries)
  if expiries[k] >= FOREVER then return false, -1 end
  return false, expiries[k] - now
end

function ALG.cc.apply(st, lim, now, cost, lease)
  if not lease then return end
  local expires = lease.ttl > 0 and now + lease.ttl or FOREVER
  st.pending[#st.pending + 1] = {expires, match(lease.lease, '^[^\n]*'), lease.lease}
  st.count = st.count + 1
  if expires < FOREVER then st.newest = max(st.newest or expires, expires) else st.forever = true end
  st.dirty = true
end

function ALG.cc.report(st, lim, now)
  local reset = 0
  if st.newest then reset = st.newest - now end  -- allocations never expire: not waited for
  return max(0, lim.q - st.count), reset
end

function ALG.cc.save(st, lim, now)
  if lim.log then  -- the leases expired by now are logged as they go (lib.lua's LOG; check.lua sets lim.log)
    local gone = call('ZRANGEBYSCORE', lim.key, '-inf', itos(now), 'WITHSCORES')
    for i = 1, #gone, 2 do LOG.expire(lim.log, lim.key, gone[i], tonumber(gone[i + 1])) end
  end
  call('ZREMRANGEBYSCORE', lim.key, '-inf', itos(now))
  for _, lease in ipairs(st.pending) do
    local forever = lease[1] >= FOREVER
    call('ZADD', lim.key, itos(lease[1]), lease[2])
    local record_key, body = match(lease[3], '^[^\n]*\n([^\n]*)\n(.*)$')
    if record_key then
      -- The usage index base (ARGV[3]) goes with it: a ClusterStore's is in the customer's slot.
      call('SET', record_key, itos(now) .. '\n' .. ARGV[3] .. '\n' .. body, 'PX',
        ttl(forever and ALLOCATION_TTL_MS or lease[1] - now))
      if not forever then ALG.cc.book(match(body, '^[^\n]*'), ARGV[3], now, now, lease[1], 1) end
    end
  end
  if st.forever then call('PERSIST', lim.key) else call('PEXPIRE', lim.key, ttl(st.newest - now)) end
end
