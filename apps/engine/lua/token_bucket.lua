-- token_bucket.lua: q tokens per per ms refill a bucket of cap tokens; a check takes its cost.
-- Same machine as the leaky bucket (see meter.lua): KEYS[lim.key] = "<level>:<last ms>:<empty at ms>".
ALG.tb = {load = METER.load, eval = METER.eval, apply = METER.apply, report = METER.report, save = METER.save,
  refund = METER.refund}
