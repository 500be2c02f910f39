"""Stand-ins for the SDK's unit tests: a clock that moves only when slept on, a transport that answers from a
script, and a small in-memory platform with token buckets (records and bytes) that replays request ids."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from quota_client import HttpResponse, TransportError

JSON = {"content-type": "application/json"}


class FakeClock:
    """Monotonic time that advances only by `sleep` (and `advance`); records every sleep."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


class SequenceRandom:
    """random() returning the given values in turn, then the last one forever."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def __call__(self) -> float:
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


def limit_entry(name: str = "per-minute", *, unit: str = "requests", over: bool = False, **extra: Any) -> dict:
    return {
        "name": name, "algorithm": "fixed_window", "unit": unit, "limit": 10, "remaining": 0 if over else 5,
        "reset_ms": 1000, "shadow": False, "over": over, **extra,
    }  # fmt: skip


def decision_body(allowed: bool = True, *, code: str | None = None, retry_after_ms: int | None = 0, **extra: Any):
    code = code or ("OK" if allowed else "OVER_LIMIT")
    limits = extra.pop("limits", [limit_entry(over=not allowed and code == "OVER_LIMIT")])
    body = {"allowed": allowed, "code": code, "retry_after_ms": retry_after_ms, "degraded": False, "limits": limits}
    return {**body, **extra}


def respond(status: int, body: Any = None, headers: Mapping[str, str] | None = None) -> HttpResponse:
    raw = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    return HttpResponse(status, {**JSON, **(headers or {})}, raw)


def allowed() -> HttpResponse:
    return respond(200, decision_body())


def over_limit(retry_after_ms: int | None = 1500, unit: str = "requests") -> HttpResponse:
    headers = {"retry-after": str(math.ceil(retry_after_ms / 1000))} if retry_after_ms else {}
    body = decision_body(False, retry_after_ms=retry_after_ms, limits=[limit_entry(unit=unit, over=True)])
    return respond(429, body, headers)


def error(status: int, code: str, message: str = "nope", fields: dict | None = None) -> HttpResponse:
    return respond(status, {"error": {"code": code, "message": message, "fields": fields or {}}})


@dataclass
class Sent:
    method: str
    url: str
    body: Any
    headers: Mapping[str, str]


class ScriptedTransport:
    """Answers each request with the next scripted answer: a response, an exception to raise, or a function of
    the request returning either."""

    def __init__(self, *answers: HttpResponse | Exception | Callable[[Sent], HttpResponse]) -> None:
        self.answers = list(answers)
        self.sent: list[Sent] = []
        self.closed = False

    def request(self, method: str, url: str, *, body: bytes | None, headers: Mapping[str, str], timeout_s: float):
        sent = Sent(method, url, json.loads(body) if body else None, dict(headers))
        self.sent.append(sent)
        if not self.answers:
            raise AssertionError(f"unexpected request {method} {url}")
        answer = self.answers.pop(0)
        if callable(answer) and not isinstance(answer, HttpResponse):
            answer = answer(sent)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self) -> None:
        self.closed = True


@dataclass
class BucketPlatform:
    """/api/v1/check/batch over token buckets (unit → (rate per s, capacity)), on a FakeClock.

    Each request takes `latency_s` of fake time. Request ids replay their first decision. Calls whose number is
    in `lose` are decided and then lost on the way back (TransportError), as a timeout would.
    """

    clock: FakeClock
    buckets: dict[str, tuple[float, float]]
    latency_s: float = 0.01
    lose: set[int] = field(default_factory=set)
    calls: int = 0
    decided: int = 0
    admitted_costs: dict[str, int] = field(default_factory=dict)
    seen: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tokens = {unit: capacity for unit, (_, capacity) in self.buckets.items()}
        self.updated = self.clock()

    def request(self, method: str, url: str, *, body: bytes | None, headers: Mapping[str, str], timeout_s: float):
        assert (method, url.rsplit("/api/v1", 1)[-1]) == ("POST", "/check/batch")
        self.clock.advance(self.latency_s)
        self.calls += 1
        self._refill()
        results = [self._decide(item) for item in json.loads(body or b"{}")["items"]]
        if self.calls in self.lose:
            raise TransportError("ReadTimeoutError: read timed out (the platform decided, the answer was lost)")
        allowed_count = sum(r["allowed"] for r in results)
        return respond(200, {"allowed_count": allowed_count, "denied_count": len(results) - allowed_count,
                             "results": results})  # fmt: skip

    def close(self) -> None:
        pass

    def _refill(self) -> None:
        elapsed = self.clock() - self.updated
        self.updated = self.clock()
        for unit, (rate, capacity) in self.buckets.items():
            self.tokens[unit] = min(capacity, self.tokens[unit] + elapsed * rate)

    def _decide(self, item: dict) -> dict:
        request_id = item.get("request_id")
        if request_id in self.seen:
            return self.seen[request_id]
        self.decided += 1
        costs = {unit: item.get("costs", {}).get(unit, 0) for unit in self.buckets}
        short = {unit: cost - self.tokens[unit] for unit, cost in costs.items() if cost > self.tokens[unit]}
        limits = [limit_entry(unit, unit=unit, over=unit in short) for unit in self.buckets]
        if not short:
            for unit, cost in costs.items():
                self.tokens[unit] -= cost
                self.admitted_costs[unit] = self.admitted_costs.get(unit, 0) + cost
            result = decision_body(True, limits=limits)
        elif any(costs[unit] > self.buckets[unit][1] for unit in short):
            result = decision_body(False, retry_after_ms=None, limits=limits)
        else:
            wait_s = max(missing / self.buckets[unit][0] for unit, missing in short.items())
            result = decision_body(False, retry_after_ms=max(1, math.ceil(wait_s * 1000)), limits=limits)
        if request_id:
            self.seen[request_id] = result
        return result
