-- sliding_window.lua: KEYS[lim.key] = "<window start ms>:<current>:<previous>", TTL two windows.
-- estimate = floor(previous * (per - elapsed) / per) + current, in doubles in exactly this order
-- (the reference model does the same operations, so both agree bit for bit).
ALG.swc = {}

local function swc_roll(st, per, t)
  local start = t - t % per
  if st.start >= start then return st.start, st.cur, st.prev end
  if st.start == start - per then return start, 0, st.cur end
  return start, 0, 0
end

local function swc_estimate(start, cur, prev, per, t)
  local elapsed = max(0, t - start)
  return floor(prev * (per - elapsed) / per) + cur
end

local function swc_admits(st, lim, t, cost)
  local start, cur, prev = swc_roll(st, lim.per, t)
  return swc_estimate(start, cur, prev, lim.per, t) + cost <= lim.q
end

function ALG.swc.load(lim, now)
  local st = {start = 0, cur = 0, prev = 0, lim = lim, dirty = false}  -- every field: growing it rehashes
  local raw = fetch(lim.key)
  if raw then
    local s, c, p = match(raw, '^(%d+):(%d+):(%d+)$')
    st.start, st.cur, st.prev = tonumber(s), tonumber(c), tonumber(p)
  end
  st.start, st.cur, st.prev = swc_roll(st, lim.per, now)
  return st
end

function ALG.swc.eval(st, lim, now, cost)
  if cost > lim.q then return false, -1 end
  if swc_admits(st, lim, now, cost) then return true, 0 end
  local low, high = now, now + 2 * lim.per
  while high - low > 1 do
    local middle = floor((low + high) / 2)
    if swc_admits(st, lim, middle, cost) then high = middle else low = middle end
  end
  return false, high - now
end

function ALG.swc.apply(st, lim, now, cost)
  st.cur = st.cur + cost
  st.dirty = true
end

function ALG.swc.report(st, lim, now)
  local remaining = max(0, lim.q - swc_estimate(st.start, st.cur, st.prev, lim.per, now))
  if st.cur > 0 then return remaining, st.start + 2 * lim.per - now end
  if st.prev > 0 then return remaining, st.start + lim.per - now end
  return remaining, 0
end

function ALG.swc.save(st, lim, now)
  local value = format('%d:%d:%d', st.start, st.cur, st.prev)
  call('SET', lim.key, value, 'PX', ttl(st.start + 2 * lim.per - now))
end

-- Cluster refund (refund.lua): the reserved amount may have rolled into "previous" since `at`.
function ALG.swc.refund(lim, cost, at, now)
  local st = ALG.swc.load(lim, now)
  local reserved = at - at % lim.per
  if st.start == reserved then
    st.cur = max(0, st.cur - cost)
  elseif st.start == reserved + lim.per then
    st.prev = max(0, st.prev - cost)
  else
    return
  end
  ALG.swc.save(st, lim, now)
end
