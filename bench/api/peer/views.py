"""The peer and ceiling views. Request bodies are the platform's: {customer, operation, resource, ip} and
{items: [...]}; each view reads what it needs and answers in a few fields."""

from __future__ import annotations

from typing import Any

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django_ratelimit.decorators import ratelimit
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

WINDOW_MS = 60_000
WINDOW_LIMIT = 1_000_000

# A fixed window on one key: the least a counter can do in one round trip.
SINGLE_LUA = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if n <= tonumber(ARGV[1]) then return 1 end
return 0
"""

# The same for every key of a batch, in one script call.
BATCH_LUA = """
local limit = tonumber(ARGV[1])
local ttl = ARGV[2]
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('PEXPIRE', key, ttl) end
  if n <= limit then out[i] = 1 else out[i] = 0 end
end
return out
"""

_client: redis.Redis | None = None
_scripts: dict[str, Any] = {}


def _script(name: str, source: str) -> Any:
    """A registered script (EVALSHA; loaded once on NOSCRIPT), on one pool per worker process."""
    global _client
    if _client is None:
        _client = redis.Redis.from_url(settings.REDIS_URL)
    if name not in _scripts:
        _scripts[name] = _client.register_script(source)
    return _scripts[name]


class RateLimited(Throttled):
    default_detail = "Over the limit."


def _customer(data: Any) -> str:
    customer = data.get("customer") if isinstance(data, dict) else None
    if not isinstance(customer, str) or not customer:
        raise ValidationError({"customer": ["This field is required."]})
    return customer


def customer_key(group: str, request: Request) -> str:
    return _customer(request.data)


def _decision(allowed: bool) -> Response:
    if allowed:
        return Response({"allowed": True, "code": "OK", "retry_after_ms": 0})
    return Response({"allowed": False, "code": "OVER_LIMIT", "retry_after_ms": None}, status=429)


class RatelimitCheck(APIView):
    """A minimal DRF view behind django-ratelimit: one fixed window per customer."""

    @method_decorator(ratelimit(key=customer_key, rate=settings.PEER_RATE, block=True))
    def post(self, request: Request) -> Response:
        return _decision(True)


class BareCheck(APIView):
    """The single-check ceiling: parse the body, one EVALSHA, answer."""

    def post(self, request: Request) -> Response:
        customer = _customer(request.data)
        key = f"{settings.PEER_KEY_PREFIX}:bare:{customer}"
        allowed = _script("single", SINGLE_LUA)(keys=[key], args=[WINDOW_LIMIT, WINDOW_MS])
        return _decision(bool(allowed))


class BareBatch(APIView):
    """The batch ceiling: parse the items, one script over one key per item, answer per item."""

    def post(self, request: Request) -> Response:
        items = request.data.get("items") if isinstance(request.data, dict) else None
        if not isinstance(items, list) or not items:
            raise ValidationError({"items": ["Must be a non-empty list of checks."]})
        prefix = settings.PEER_KEY_PREFIX
        keys = [f"{prefix}:batch:{_customer(item)}:{item.get('resource', '')}" for item in items]
        flags = _script("batch", BATCH_LUA)(keys=keys, args=[WINDOW_LIMIT, WINDOW_MS])
        allowed = sum(flags)
        return Response(
            {
                "allowed_count": allowed,
                "denied_count": len(flags) - allowed,
                "results": [{"allowed": bool(flag)} for flag in flags],
            }
        )


def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain")
