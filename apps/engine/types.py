"""Value objects of the engine: what a caller asks (LimitSpec, CheckItem) and what it gets back (Decision).

Every type is a frozen dataclass, validated on construction, so a bad limit or check fails with
`InvalidCheck` (a ValueError) before any counter moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

FIXED_WINDOW = "fixed_window"
CALENDAR = "calendar"
SLIDING_WINDOW = "sliding_window"
SLIDING_LOG = "sliding_log"
TOKEN_BUCKET = "token_bucket"  # noqa: S105 -- an algorithm name, not a credential
LEAKY_BUCKET = "leaky_bucket"
CONCURRENCY = "concurrency"
SESSION_TIME = "session_time"
ALGORITHM_NAMES = (
    FIXED_WINDOW,
    CALENDAR,
    SLIDING_WINDOW,
    SLIDING_LOG,
    TOKEN_BUCKET,
    LEAKY_BUCKET,
    CONCURRENCY,
    SESSION_TIME,
)
# Spent by leases, not by checks: a plain check only looks at them (admits while a slot or time is left).
LEASED = (CONCURRENCY, SESSION_TIME)
BUCKETS = (TOKEN_BUCKET, LEAKY_BUCKET)
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
    bounded: reference/concurrency.MAX_RESYNC_CHANGES). Nothing was written."""


class IdempotencyKeyReused(Exception):
    """A request id remembered (or repeated earlier in the same batch) for a check with other parameters.

    Raised before anything is decided or written: the whole call consumed nothing. `indexes`: the positions
    (from 0) of the offending items in the call (a single check or a lease is item 0).
    """

    def __init__(self, indexes: tuple[int, ...]) -> None:
        super().__init__(f"request id reused with different parameters by item(s) {list(indexes)}")
        self.indexes = indexes


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvalidCheck(message)


def _is_count(value: object, minimum: int = 0) -> bool:
    return type(value) is int and minimum <= value <= MAX_SAFE_INT


@dataclass(frozen=True, slots=True)
class LimitSpec:
    """One resolved limit (overrides already applied by the caller).

    name: unique among the limits of a check; part of the counter key.
    algorithm: one of ALGORITHM_NAMES.
    quantity: units admitted per period (buckets: refill/drain rate per period; concurrency: leases;
        session_time: seconds of lease time per window).
    period_s: the period in whole seconds (every algorithm but calendar and concurrency).
    calendar_period: "day" | "week" | "month" in the customer's time zone (calendar only).
    burst: bucket capacity; defaults to quantity.
    unit: the cost dimension charged ("requests", "records", "bytes", ...).
    key_by: which of customer / resource / ip / service / api_key / attr:<name> make the counter key; () = global.
    shadow: counted and reported, never rejects (a shadow limit that would reject consumes nothing).
    durable: its counter survives the loss of the store's data (calendar quotas, and windows, logs and
        buckets of a minute or longer): each check records what it spent, and a missing counter is
        rebuilt from those records by the store's seeder (durability.py).

    A concurrency limit holds leases: lease_acquire takes one slot; in a plain check it only looks
    (admits while a slot is free) and takes nothing. A session_time limit counts the time leases are held:
    the leases acquired with it among their limits count from acquisition to release or expiry, within
    fixed windows of period_s; acquiring and renewing are refused once the window's time is spent, and a plain
    check only looks (admits while time is left). It is never durable: its time is made of live leases, which
    are not either (reference/session_time.py).
    audit: every decision on it is written to the decision log, in the same call (decision_log.py).
    """

    name: str
    algorithm: str
    quantity: int
    period_s: int | None = None
    calendar_period: str | None = None
    burst: int | None = None
    unit: str = REQUESTS
    key_by: tuple[str, ...] = ()
    shadow: bool = False
    durable: bool = False
    audit: bool = False

    def __post_init__(self) -> None:
        _require(isinstance(self.name, str) and self.name != "", "a limit needs a name")
        _require(self.algorithm in ALGORITHM_NAMES, f"limit {self.name!r}: unknown algorithm {self.algorithm!r}")
        _require(_is_count(self.quantity), f"limit {self.name!r}: quantity must be an integer in [0, 2**53)")
        _require(isinstance(self.unit, str) and self.unit != "", f"limit {self.name!r}: unit must be a name")
        _require(isinstance(self.key_by, tuple), f"limit {self.name!r}: key_by must be a tuple")
        for entry in self.key_by:
            known = entry in KEY_FIELDS or (entry.startswith(ATTRIBUTE_PREFIX) and len(entry) > len(ATTRIBUTE_PREFIX))
            _require(known, f"limit {self.name!r}: cannot key by {entry!r}")
        _require(len(set(self.key_by)) == len(self.key_by), f"limit {self.name!r}: key_by repeats an entry")
        self._check_period()
        _require(
            not self.durable or self.can_be_durable,
            f"limit {self.name!r}: only calendar quotas and windows, logs or buckets of a minute or longer are durable",
        )
        _require(
            self.algorithm != SESSION_TIME or self.quantity * 1000 <= MAX_SAFE_INT,
            f"limit {self.name!r}: quantity (seconds) x 1000 must stay below 2**53",
        )
        if self.algorithm in BUCKETS:
            self._check_bucket()
        else:
            _require(self.burst is None, f"limit {self.name!r}: burst applies to buckets only")

    def _check_period(self) -> None:
        if self.algorithm == CALENDAR:
            _require(
                self.calendar_period in CALENDAR_PERIODS, f"limit {self.name!r}: calendar_period must be day/week/month"
            )
        elif self.algorithm != CONCURRENCY:
            _require(
                _is_count(self.period_s, 1) and self.period_s * 1000 <= MAX_SAFE_INT,  # type: ignore[operator]
                f"limit {self.name!r}: period_s must be a positive integer",
            )

    def _check_bucket(self) -> None:
        _require(self.quantity >= 1, f"limit {self.name!r}: a bucket needs a rate of at least 1 per period")
        _require(self.burst is None or _is_count(self.burst, 1), f"limit {self.name!r}: burst must be >= 1")
        # Bucket levels are kept in 1/period_ms units of a token: capacity * period_ms must stay exact in Lua.
        _require(
            max(self.capacity, self.quantity) * self.period_ms <= MAX_SAFE_INT,
            f"limit {self.name!r}: burst x period (ms) exceeds 2**53; use a shorter period or a window algorithm",
        )

    @property
    def can_be_durable(self) -> bool:
        """Calendar quotas, and every algorithm but the leased ones with a period of a minute or longer."""
        return self.algorithm == CALENDAR or (self.algorithm not in LEASED and self.period_ms >= MINUTE_MS)

    @property
    def period_ms(self) -> int:
        """The period in milliseconds (0 for calendar and concurrency limits)."""
        return (self.period_s or 0) * 1000 if self.algorithm not in (CALENDAR, CONCURRENCY) else 0

    @property
    def capacity(self) -> int:
        """The most one check can ever spend: the burst for buckets, the quantity otherwise."""
        if self.algorithm in BUCKETS and self.burst is not None:
            return self.burst
        return self.quantity


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
    max_wait_ms: how long the caller accepts to wait on a leaky bucket (a shaper, reference/leaky_bucket.py)
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
        _require(isinstance(self.customer, str) and self.customer != "", "a check needs a customer")
        _require(isinstance(self.operation, str) and self.operation != "", "a check needs an operation")
        for unit, cost in self.costs.items():
            _require(isinstance(unit, str) and unit != "", "cost units must be names")
            _require(_is_count(cost), f"cost of {unit!r} must be an integer in [0, 2**53)")
        _require(self.request_id is None or self.request_id != "", "request_id must not be empty")
        _require(
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
    """

    allowed: bool
    retry_after_ms: int | None
    limits: tuple[LimitResult, ...]
    replayed: bool = False
    delay_ms: int = 0


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
