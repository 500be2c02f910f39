-- leaky_bucket.lua: a bucket of cap units draining q per per ms; a check that would overflow it
-- is rejected whole. Policing meter (see meter.lua): KEYS[lim.key] = "<level>:<last ms>:<empty at ms>".
ALG.lb = METER
