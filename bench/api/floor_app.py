"""The floor of a Python HTTP quota check: a bare WSGI app that parses the JSON body, runs one EVALSHA
over three fixed-window counters (INCRBY + PEXPIRE each, the cheapest honest 3-limit check) and answers JSON.
No framework, no auth, no usage: what any Python check service must at least spend per request.

Origin: the floor app issue 25 ("Pay only for what you use") measured the platform against, copied here so
bench/api/run.py serves it as a phase with the same server, workers and client as the platform. Changed only
where bench/api needs it: the Redis URL and key prefix come from the environment (FLOOR_REDIS_URL,
FLOOR_KEY_PREFIX; the bench deletes its keys afterwards) and GET /healthz answers without Redis (the bench
waits on it before the load). The request path is the same as the original's.

    FLOOR_REDIS_URL=redis://127.0.0.1:6379/0 .venv/bin/gunicorn bench.api.floor_app:application -w 2
"""

import json
import os
from collections.abc import Callable
from typing import Any

import redis

R = redis.Redis.from_url(os.environ.get("FLOOR_REDIS_URL", "redis://127.0.0.1:6379/0"))
PREFIX = os.environ.get("FLOOR_KEY_PREFIX", "f")
LUA = """
local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.call('INCRBY', k, 1)
  if v == 1 then redis.call('PEXPIRE', k, 60000) end
  out[i] = v
end
return out
"""
SHA = R.script_load(LUA)
HEALTHY = b'{"status":"ok"}'


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    if environ.get("REQUEST_METHOD") == "GET":  # /healthz: the bench's readiness probe
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(HEALTHY)))])
        return [HEALTHY]
    n = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(n) or b"{}")
    c, op, res = body.get("customer", ""), body.get("operation", ""), body.get("resource", "")
    v = R.evalsha(SHA, 3, f"{PREFIX}:{{{c}}}:{op}", f"{PREFIX}:{{{c}}}:{op}:{res}", f"{PREFIX}:g:{op}")
    out = json.dumps({"allowed": max(v) <= 1000000, "remaining": 1000000 - max(v)}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]
