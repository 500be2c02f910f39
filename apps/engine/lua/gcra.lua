-- gcra.lua: GCRA as redis-cell and Stripe run it (reference/gcra.py): one theoretical arrival time (TAT) per key.
-- KEYS[lim.key] = "<tat ms>:<frac>", TAT = tat + frac / q ms, TTL to the TAT. The state works on `ahead`, how
-- far the TAT is ahead of now in 1/q ms: one unit of cost is per of them, the burst cap * per.
ALG.gc = {}

-- Exact integer floor of a / b for a >= 0, b > 0 below 2^53 (the division itself may round).
local function gc_fdiv(a, b)
  local q = floor(a / b)
  while q * b > a do q = q - 1 end
  while (q + 1) * b <= a do q = q + 1 end
  return q
end

function ALG.gc.load(lim, now)
  local st = {ahead = 0, lim = lim, dirty = false}  -- every field: growing it rehashes
  local raw = fetch(lim.key)
  if raw then
    local tat, frac = match(raw, '^(%d+):(%d+)$')
    st.ahead = max(0, (tonumber(tat) - now) * lim.q + tonumber(frac))
  end
  return st
end

function ALG.gc.eval(st, lim, now, cost)
  if cost > lim.cap then return false, -1 end
  local excess = st.ahead + (cost - lim.cap) * lim.per
  if excess <= 0 then return true, 0 end
  return false, ceil_div(excess, lim.q)
end

function ALG.gc.apply(st, lim, now, cost)
  st.ahead = st.ahead + cost * lim.per
  st.dirty = true
end

function ALG.gc.report(st, lim, now)
  return gc_fdiv(max(0, lim.cap * lim.per - st.ahead), lim.per), ceil_div(st.ahead, lim.q)
end

function ALG.gc.save(st, lim, now)
  local whole = gc_fdiv(st.ahead, lim.q)
  local frac = st.ahead - whole * lim.q
  local expires = now + whole + (frac > 0 and 1 or 0)
  call('SET', lim.key, format('%d:%d', now + whole, frac), 'PX', ttl(expires - now))
end

-- Cluster refund (refund.lua): the TAT moves back by the cost's intervals, never before now.
function ALG.gc.refund(lim, cost, at, now)
  local st = ALG.gc.load(lim, now)
  st.ahead = max(0, st.ahead - cost * lim.per)
  ALG.gc.save(st, lim, now)
end
