-- calendar.lua: KEYS[lim.key] = "<window start ms>:<used>", TTL to the window's end.
-- ARGV per limit: the window boundaries computed in Python (zoneinfo); check.lua picks the
-- [lim.ws, lim.we) containing Redis time.
ALG.cal = {}

function ALG.cal.load(lim, now)
  return window_load(lim, lim.ws)
end

function ALG.cal.eval(st, lim, now, cost)
  if cost > lim.q then return false, -1 end
  if st.used + cost <= lim.q then return true, 0 end
  return false, max(1, lim.we - now)
end

function ALG.cal.apply(st, lim, now, cost)
  st.used = st.used + cost
  st.dirty = true
end

function ALG.cal.report(st, lim, now)
  return max(0, lim.q - st.used), max(0, lim.we - now)
end

function ALG.cal.save(st, lim, now)
  call('SET', lim.key, format('%d:%d', st.start, st.used), 'PX', ttl(lim.we - now))
end

-- Cluster refund (refund.lua): give back `cost` spent at `at` while its window still runs.
function ALG.cal.refund(lim, cost, at, now)
  if now >= lim.we then return end
  local st = window_load(lim, lim.ws)
  if st.start ~= lim.ws or st.used == 0 then return end
  st.used = max(0, st.used - cost)
  ALG.cal.save(st, lim, now)
end
