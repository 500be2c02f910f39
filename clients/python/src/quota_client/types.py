"""Value objects: what a check asks, what the platform decided, what a batch and a put_all came to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from quota_client.backoff import BackoffMetrics

OK, OVER_LIMIT, DENIED = "OK", "OVER_LIMIT", "DENIED"
# The check costs more than a limit can ever hold: no wait admits it as sent (retry_after_ms is None).
COST_EXCEEDS_LIMIT = "COST_EXCEEDS_LIMIT"


@dataclass(frozen=True)
class CheckItem:
    """One check: may `customer` do `operation` (on `resource`, at this cost) now?

    `costs` maps a unit to a whole number (`{"records": 5, "bytes": 1024}`; `requests` defaults to 1).
    `request_id` makes the check idempotent for 10 minutes; the client sets one when it is left out.
    `max_wait_ms`: how long the caller accepts to wait; a leaky-bucket (shaper) limit then admits a request that
    fits within that wait with `Decision.delay_ms` instead of refusing it.
    """

    customer: str
    operation: str
    resource: str | None = None
    attributes: Mapping[str, str] | None = None
    costs: Mapping[str, int] | None = None
    ip: str | None = None
    request_id: str | None = None
    dry_run: bool = False
    max_wait_ms: int | None = None

    def body(self) -> dict[str, Any]:
        """The JSON object the API takes: only the fields that are set."""
        body: dict[str, Any] = {"customer": self.customer, "operation": self.operation}
        if self.resource:
            body["resource"] = self.resource
        if self.attributes:
            body["attributes"] = dict(self.attributes)
        if self.costs:
            body["costs"] = dict(self.costs)
        if self.ip:
            body["ip"] = self.ip
        if self.request_id:
            body["request_id"] = self.request_id
        if self.dry_run:
            body["dry_run"] = True
        if self.max_wait_ms is not None:
            body["max_wait_ms"] = self.max_wait_ms
        return body

    def with_request_id(self, request_id: str) -> CheckItem:
        return replace(self, request_id=request_id)


def as_item(item: CheckItem | Mapping[str, Any]) -> CheckItem:
    """A CheckItem from itself or from a dict with the same field names."""
    if isinstance(item, CheckItem):
        return item
    unknown = set(item) - set(CheckItem.__dataclass_fields__)
    if unknown:
        raise TypeError(f"Unknown check field(s): {', '.join(sorted(unknown))}.")
    return CheckItem(**item)


@dataclass(frozen=True)
class LimitStatus:
    """One evaluated limit, as the platform reported it.

    `subject`: whose count it is, the check's values the limit is keyed by, e.g. {"customer": "acct-1",
    "resource": "stream-1"} or {"attributes": {"shard": "7"}} ({} for a limit shared by every caller).
    `mode`: "exact" (decided by the platform's counters) or "hybrid" (counted locally, synced)."""

    name: str
    algorithm: str
    unit: str
    limit: int
    remaining: int
    reset_ms: int
    shadow: bool
    over: bool
    subject: Mapping[str, Any] = field(default_factory=dict, hash=False)
    mode: str = "exact"

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> LimitStatus:
        """An answer's `limits` entry; `subject` and `mode` are optional (platforms before them sent neither)."""
        reported = {name: entry[name] for name in _REPORTED_FIELDS}
        return cls(**reported, subject=dict(entry.get("subject") or {}), mode=str(entry.get("mode") or "exact"))


@dataclass(frozen=True)
class Decision:
    """The platform's answer to one check.

    `from_cache`: answered locally from a denial still in force (no call was made).
    `failed_open`: the platform could not be reached and the client is configured to fail open.
    `message`: why a refusal happened, in words. `warnings`: e.g. "unknown_customer", "unknown_operation".
    `delay_ms`: admitted by a shaper (a check with `max_wait_ms`), the time to wait before doing the work, so
    admitted requests leave at the limit's constant rate (0: go now).
    """

    allowed: bool
    code: str
    retry_after_ms: int | None
    degraded: bool = False
    limits: tuple[LimitStatus, ...] = ()
    request_id: str | None = None
    from_cache: bool = False
    failed_open: bool = False
    message: str | None = None
    warnings: tuple[str, ...] = ()
    delay_ms: int = 0

    @property
    def delay_s(self) -> float:
        return self.delay_ms / 1000

    @property
    def retry_after_s(self) -> float | None:
        return None if self.retry_after_ms is None else self.retry_after_ms / 1000

    @property
    def denied(self) -> bool:
        """Refused by an access rule (not a limit): waiting will not help."""
        return self.code == DENIED

    @classmethod
    def from_body(cls, body: Mapping[str, Any], request_id: str | None = None) -> Decision:
        limits = tuple(LimitStatus.from_entry(entry) for entry in body["limits"])
        return cls(
            allowed=bool(body["allowed"]),
            code=str(body["code"]),
            retry_after_ms=body["retry_after_ms"],
            degraded=bool(body.get("degraded", False)),
            limits=limits,
            request_id=request_id,
            message=body.get("message"),
            warnings=tuple(body.get("warnings", ())),
            delay_ms=int(body.get("delay_ms") or 0),
        )


# What every platform reports for each limit.
_REPORTED_FIELDS = ("name", "algorithm", "unit", "limit", "remaining", "reset_ms", "shadow", "over")


@dataclass(frozen=True)
class BatchResult:
    """Decisions in request order."""

    decisions: tuple[Decision, ...]

    @property
    def allowed_count(self) -> int:
        return sum(decision.allowed for decision in self.decisions)

    @property
    def denied_count(self) -> int:
        return len(self.decisions) - self.allowed_count

    @property
    def admitted(self) -> list[int]:
        """Indexes of the admitted items."""
        return [index for index, decision in enumerate(self.decisions) if decision.allowed]

    @property
    def rejected(self) -> list[int]:
        return [index for index, decision in enumerate(self.decisions) if not decision.allowed]


@dataclass
class PutAllResult:
    """What put_all came to.

    `admitted`: item indexes in the order the platform admitted them (resubmission reorders: an item refused
    once comes after items admitted meanwhile). `failed`: index → the last refusal, for items that can never
    pass (denied, or costlier than the limit's capacity) or that ran out of retries. `shaped_s`: the time spent
    waiting for a ProducerShaper before rounds (`shaper_waits` waits), apart from `slept_s`, the back-off's.
    """

    admitted: list[int] = field(default_factory=list)
    failed: dict[int, Decision] = field(default_factory=dict)
    requests: int = 0
    rounds: int = 0
    resubmitted: int = 0
    degraded: int = 0
    slept_s: float = 0.0
    shaped_s: float = 0.0
    shaper_waits: int = 0
    elapsed_s: float = 0.0
    backoff: BackoffMetrics = field(default_factory=BackoffMetrics)

    @property
    def all_admitted(self) -> bool:
        return not self.failed
