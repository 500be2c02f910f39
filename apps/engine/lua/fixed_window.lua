-- fixed_window.lua: KEYS[lim.key] = "<window start ms>:<used>", TTL to the window's end.
-- ARGV per limit (see check.lua): q = quantity, per = period ms.
ALG.fw = {}

function ALG.fw.load(lim, now)
  return window_load(lim, now - now % lim.per)
end

function ALG.fw.eval(st, lim, now, cost)
  if cost > lim.q then return false, -1 end
  if st.used + cost <= lim.q then return true, 0 end
  return false, st.start + lim.per - now
end

function ALG.fw.apply(st, lim, now, cost)
  st.used = st.used + cost
  st.dirty = true
end

function ALG.fw.report(st, lim, now)
  return max(0, lim.q - st.used), st.start + lim.per - now
end

function ALG.fw.save(st, lim, now)
  call('SET', lim.key, format('%d:%d', st.start, st.used), 'PX', ttl(st.start + lim.per - now))
end

-- Cluster refund (refund.lua): give back `cost` spent at `at` while its window still runs.
function ALG.fw.refund(lim, cost, at, now)
  local start = at - at % lim.per
  if now >= start + lim.per then return end
  local st = window_load(lim, start)
  if st.start ~= start or st.used == 0 then return end
  st.used = max(0, st.used - cost)
  ALG.fw.save(st, lim, now)
end
