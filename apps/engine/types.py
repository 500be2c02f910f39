"""Value objects of the engine: what a caller asks (CheckItem; LimitSpec is in limit_spec.py) and what it gets
back (Decision).

Every type is a frozen dataclass, validated on construction, so a bad limit or check fails with
`InvalidCheck` (a ValueError) before any counter moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from apps.engine.limit_spec import LimitSpec

CALENDAR_PERIODS = ("day", "week", "month")
# service: the calling service's name; api_key: the calling key's prefix (never its secret).
KEY_FIELDS = ("customer", "resource", "ip", "service", "api_key")
ATTRIBUTE_PREFIX = "attr:"
REQUESTS = "requests"
MINUTE_MS = 60_000
# The longest a check may accept to wait on a leaky bucket (a shaper): its max_wait_ms is at most this.
MAX_WAIT_MS = 60_000
# Redis Lua numbers are doubles: every integer the scripts handle must stay below 2**53 to stay exact.
MAX_SAFE_INT = 2**53 - 1
BatchMode = Literal["independent", "atomic"]
BATCH_MODES = ("independent", "atomic")


class InvalidCheck(ValueError):
    """A limit or a check the engine cannot evaluate (raised before anything is counted)."""


class SessionTimeSpent(Exception):
    """A lease renewal refused: a session_time limit the lease counts against has no time left in its window.

    The lease keeps its current expiry. retry_after_ms: when the window ends and a renewal would pass (None
    when the limit allows no time at all).
    """

    def __init__(self, retry_after_ms: int | None) -> None:
        super().__init__(f"session time spent; retry after {retry_after_ms} ms")
        self.retry_after_ms = retry_after_ms


class ResyncTooLarge(Exception):
    """An allocation resync refused: it would add or drop more allocations than one call may (its Redis work is
    bounded: lease_terms.MAX_RESYNC_CHANGES). Nothing was written."""


@dataclass(frozen=True, slots=True)
class Resynced:
    """What an allocation resync did: how many allocations the customer held before, the counter (its key without
    the store prefix, as the allocations' durable copy names it) and the customer's allocations now (members)."""

    before: int
    counter: str
    members: tuple[str, ...]


class IdempotencyKeyReused(Exception):
    """A request id remembered (or repeated earlier in the same batch) for a check with other parameters.

    Raised before anything is decided or written: the whole call consumed nothing. `indexes`: the positions
    (from 0) of the offending items in the call (a single check or a lease is item 0).
    """

    def __init__(self, indexes: tuple[int, ...]) -> None:
        super().__init__(f"request id reused with different parameters by item(s) {list(indexes)}")
        self.indexes = indexes


def require(condition: bool, message: str) -> None:
    """Raise InvalidCheck(message) unless `condition`."""
    if not condition:
        raise InvalidCheck(message)


def is_count(value: object, minimum: int = 0) -> bool:
    """An integer in [minimum, 2**53)."""
    return type(value) is int and minimum <= value <= MAX_SAFE_INT


@dataclass(frozen=True, slots=True)
class CheckItem:
    """One request to decide: who spends what, on which operation.

    costs: unit -> non-negative integer; "requests" is 1 when absent.
    request_id: a repeat within 10 minutes returns the first decision and consumes nothing; the same id with
        other parameters (operation, resource, attributes, costs, dry_run, lease ttl) raises
        IdempotencyKeyReused (plan.request_fingerprint).
    dry_run: evaluate without consuming (and without recording usage or the request id; an id remembered
        for a real check is refused as reused).
    timezone: IANA zone of the customer, used by calendar limits.
    service, api_key: the calling service's name and the calling key's prefix (never its secret), filled in by
        the caller from the authenticated key, for limits keyed by service or api_key ("" = none).
    max_wait_ms: how long the caller accepts to wait on a leaky bucket (a shaper: its entry's `shaper`)
        before proceeding; 0 = refuse what does not fit now. At most MAX_WAIT_MS.
    """

    customer: str
    operation: str
    resource: str = ""
    attributes: Mapping[str, str] = field(default_factory=dict)
    costs: Mapping[str, int] = field(default_factory=dict)
    ip: str = ""
    request_id: str | None = None
    dry_run: bool = False
    timezone: str = "UTC"
    service: str = ""
    api_key: str = ""
    max_wait_ms: int = 0

    def __post_init__(self) -> None:
        require(isinstance(self.customer, str) and self.customer != "", "a check needs a customer")
        require(isinstance(self.operation, str) and self.operation != "", "a check needs an operation")
        for unit, cost in self.costs.items():
            require(isinstance(unit, str) and unit != "", "cost units must be names")
            require(is_count(cost), f"cost of {unit!r} must be an integer in [0, 2**53)")
        require(self.request_id is None or self.request_id != "", "request_id must not be empty")
        require(
            type(self.max_wait_ms) is int and 0 <= self.max_wait_ms <= MAX_WAIT_MS,
            f"max_wait_ms must be an integer in [0, {MAX_WAIT_MS}]",
        )

    def cost_of(self, unit: str) -> int:
        """What this check spends of `unit` (requests default to 1, other units to 0)."""
        return self.costs.get(unit, 1 if unit == REQUESTS else 0)


@dataclass(frozen=True, slots=True)
class LimitResult:
    """How one limit judged a check.

    remaining: units left after this check (before it, when the check was not admitted or was a dry run).
    reset_ms: milliseconds until the limit is back to full (window end for window algorithms).
    over: this limit did not admit the check (for a shadow limit: would not have).
    """

    name: str
    algorithm: str
    unit: str
    limit: int
    remaining: int
    reset_ms: int
    shadow: bool
    over: bool


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict on one check.

    retry_after_ms: 0 when allowed; otherwise the earliest delay after which the same check would be
    admitted if nothing else happened; None when its cost exceeds a limit's capacity (never admitted).
    replayed: the request_id was seen before and this is the first decision, returned again.
    delay_ms: allowed only: how long the caller must wait before proceeding, so that what its leaky buckets
    (shapers) admitted leaves at their rate (the largest of their delays; 0 = go now).
    decided_at_ms: the store's time of the decision (the check script's `now`; 0 = not known, e.g. a replay). Usage
    is tallied in its minute and durable records in its buckets, so they agree with the windows the store decided
    in whatever the host's clock says (apps/engine/decision_usage.py). Not part of equality: two decisions
    that say the same are equal whenever they were made.
    """

    allowed: bool
    retry_after_ms: int | None
    limits: tuple[LimitResult, ...]
    replayed: bool = False
    delay_ms: int = 0
    decided_at_ms: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class SeedRequest:
    """A durable counter found missing: what did `counter` (its key without the store prefix) record
    from `since_ms` up to `now_ms`? Answered by the store's seeder with (bucket start ms, amount) pairs
    (see durability.py); `spec` and `item` say which limit and check the counter belongs to."""

    spec: LimitSpec
    item: CheckItem
    counter: str
    since_ms: int
    now_ms: int
