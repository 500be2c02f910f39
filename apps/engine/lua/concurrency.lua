-- concurrency.lua: KEYS[lim.key] = sorted set of leases, member "<b64 customer>.<random>",
-- score = expiry ms; a lease counts while its expiry > now. TTL until the last lease expires.
-- A check without a lease only looks (is a slot free?); lease_acquire passes the member to hold.
ALG.cc = {}

function ALG.cc.load(lim, now)
  local st = {count = call('ZCOUNT', lim.key, '(' .. itos(now), '+inf'), newest = nil, pending = {}, lim = lim,
    dirty = false}
  if st.count > 0 then
    st.newest = tonumber(call('ZRANGE', lim.key, -1, -1, 'WITHSCORES')[2])
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
  return false, expiries[k] - now
end

function ALG.cc.apply(st, lim, now, cost, lease)
  if not lease then return end
  local expires = now + lease.ttl
  st.pending[#st.pending + 1] = {expires, lease.lease}
  st.count = st.count + 1
  st.newest = max(st.newest or expires, expires)
  st.dirty = true
end

function ALG.cc.report(st, lim, now)
  local reset = 0
  if st.newest then reset = st.newest - now end
  return max(0, lim.q - st.count), reset
end

function ALG.cc.save(st, lim, now)
  call('ZREMRANGEBYSCORE', lim.key, '-inf', itos(now))
  for _, lease in ipairs(st.pending) do
    call('ZADD', lim.key, itos(lease[1]), lease[2])
  end
  call('PEXPIRE', lim.key, ttl(st.newest - now))
end
