-- lookback.lua: the earliest time whose spending still shapes a durable counter at `now`
-- (durability.lookback_start): a window looks back to its start (a sliding window counter one window more), a log
-- one period, and a bucket twice the time a full bucket takes to drain (durability.rebuild), a shaper's with its
-- queue. A missing durable counter whose look-back began before the epoch may have lost what its records hold.
local function lookback(lim, now)
  local code = lim.code
  if code == 'cal' then return lim.ws end
  if code == 'fw' then return now - now % lim.per end
  if code == 'swc' then return now - now % lim.per - lim.per end
  if code == 'sl' then return now - lim.per end
  return now - 2 * (ceil_div(lim.cap * lim.per, lim.q) + (code == 'lb' and MAX_WAIT_MS or 0))
end
