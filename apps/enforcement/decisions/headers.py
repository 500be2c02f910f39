"""RateLimit-Policy / RateLimit headers (IETF httpapi ratelimit-headers draft, structured fields) and Retry-After.

RateLimit-Policy: "daily";q=10;w=86400
RateLimit: "daily";r=3;t=3600
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from apps.limits.algorithms import holds_leases

# Quota units the draft registers; anything else is sent as its own name. A limit whose counter is the set of
# leases held counts requests in flight: the draft's concurrent-requests.
QUOTA_UNITS = {"requests": None, "bytes": "content-bytes"}
CONCURRENT = "concurrent-requests"


class LimitLike(Protocol):
    """What the headers read of a limit's result: properties, so read-only ones (a frozen LimitResult) qualify."""

    @property
    def name(self) -> str: ...
    @property
    def algorithm(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def limit(self) -> int: ...
    @property
    def remaining(self) -> int: ...
    @property
    def reset_ms(self) -> int: ...
    @property
    def shadow(self) -> bool: ...
    @property
    def over(self) -> bool: ...


def most_restrictive(results: Sequence[LimitLike]) -> LimitLike | None:
    """The enforced limit a client should watch: one that refused, else the one closest to empty."""
    enforced = [result for result in results if not result.shadow]
    if not enforced:
        return None
    return min(enforced, key=lambda r: (not r.over, r.remaining / r.limit if r.limit else 0.0, -r.reset_ms))


def _sf_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def ratelimit_headers(results: Sequence[LimitLike], windows_s: Mapping[str, int]) -> dict[str, str]:
    """Both headers for the most restrictive limit; {} when no enforced limit applied."""
    result = most_restrictive(results)
    if result is None:
        return {}
    name = _sf_string(result.name)
    policy = f"{name};q={result.limit};w={windows_s.get(result.name, 0)}"
    unit = CONCURRENT if holds_leases(result.algorithm) else QUOTA_UNITS.get(result.unit, result.unit)
    if unit:
        policy += f";qu={_sf_string(unit)}"
    return {
        "RateLimit-Policy": policy,
        "RateLimit": f"{name};r={max(result.remaining, 0)};t={math.ceil(result.reset_ms / 1000)}",
    }


def retry_after_header(retry_after_ms: int | None) -> dict[str, str]:
    """Retry-After in whole seconds, rounded up so a client that waits exactly that long is not early."""
    if not retry_after_ms:
        return {}
    return {"Retry-After": str(math.ceil(retry_after_ms / 1000))}
