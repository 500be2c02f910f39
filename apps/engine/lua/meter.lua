-- meter.lua: the policing meter under the bucket fragments (algorithms/meter.py).
-- KEYS[lim.key] = "<level>:<last ms>:<empty at ms>": the consumed amount in 1/per units (capacity =
-- cap * per), draining q units per millisecond. "Empty at" is when it drains at the rate in force when
-- written (the reference model's expires_at): past it the meter is empty even if the rate was lowered
-- since, in Redis and in memory alike. The key's TTL ends there too.
local METER = {}

-- Exact integer floor and ceiling of a / b (defined here: only the meters divide).
local function fdiv(a, b)
  local q = floor(a / b)
  while q * b > a do q = q - 1 end
  while (q + 1) * b <= a do q = q + 1 end
  return q
end

local function cdiv(a, b)
  return -fdiv(-a, b)
end

function METER.load(lim, now)
  local st = {level = 0, last = now, lim = lim, dirty = false}  -- every field: growing it rehashes
  local raw = fetch(lim.key)
  if raw then
    local level, last, expires = match(raw, '^(%d+):(%d+):(%d+)$')
    st.level, st.last = tonumber(level), tonumber(last)
    if now >= tonumber(expires) then
      st.level, st.last = 0, now
    elseif now > st.last then
      if now - st.last >= cdiv(st.level, lim.q) then
        st.level = 0
      else
        st.level = st.level - (now - st.last) * lim.q
      end
      st.last = now
    end
  end
  return st
end

function METER.eval(st, lim, now, cost)
  if cost > lim.cap then return false, -1 end
  local excess = st.level + cost * lim.per - lim.cap * lim.per
  if excess <= 0 then return true, 0 end
  return false, cdiv(excess, lim.q)
end

function METER.apply(st, lim, now, cost)
  st.level = st.level + cost * lim.per
  st.dirty = true
end

function METER.report(st, lim, now)
  return fdiv(max(0, lim.cap * lim.per - st.level), lim.per), cdiv(st.level, lim.q)
end

function METER.save(st, lim, now)
  local expires = st.last + cdiv(st.level, lim.q)
  call('SET', lim.key, format('%d:%d:%d', st.level, st.last, expires), 'PX', ttl(expires - now))
end

-- Cluster refund (refund.lua): drained to now first, then the cost leaves the level.
function METER.refund(lim, cost, at, now)
  local st = METER.load(lim, now)
  st.level = max(0, st.level - cost * lim.per)
  METER.save(st, lim, now)
end
