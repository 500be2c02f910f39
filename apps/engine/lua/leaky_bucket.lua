-- leaky_bucket.lua: a shaper (reference/leaky_bucket.py): a bucket of cap units draining q per per ms, whose
-- level may rise above cap by what is queued. KEYS[lim.key] = "<level>:<last ms>:<empty at ms>" (meter.lua's
-- state). eval takes the item's max wait (ms) as a fifth argument: a cost that fits within that wait is
-- admitted with its delay (third result), one that does not is refused with the delay less the wait.
ALG.lb = {load = METER.load, apply = METER.apply, report = METER.report, save = METER.save, refund = METER.refund}

function ALG.lb.eval(st, lim, now, cost, wait)
  if cost > lim.cap then return false, -1 end
  local excess = st.level + cost * lim.per - lim.cap * lim.per
  local delay = 0
  if excess > 0 then delay = cdiv(excess, lim.q) end
  if delay <= wait then return true, 0, delay end
  return false, delay - wait
end

-- An item's need on the level in an atomic batch (leaky_bucket.need), and when every item would pass
-- (leaky_bucket.batch_retry; -1 = never).
function ALG.lb.need(lim, cumulative, cost, wait)
  if cost > lim.cap then return lim.cap * lim.per + 1 end
  return cumulative * lim.per - wait * lim.q
end

function ALG.lb.batch_retry(st, lim, most)
  if most > lim.cap * lim.per then return -1 end
  return max(0, cdiv(st.level + most - lim.cap * lim.per, lim.q))
end
