"""What one algorithm declares: the shape of an entry in apps/engine/registry.py.

An entry says everything the rest of the platform needs to know about an algorithm, in one place: its
reference model and Lua fragment(s), the parameters an operator sets (plain data, read by the limits app
for YAML, admin forms and summaries), whether and how a lost counter is rebuilt, how a Redis Cluster
reservation is refunded, whether hybrid counting applies, and how the quality audit judges its decisions.

Nothing has a silent default where a wrong default would bite: `durability` and `refund` must be declared
(NOT_DURABLE and NO_REFUND are explicit choices, checked at registration in registry.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from apps.engine.reference.base import Params

if TYPE_CHECKING:
    from apps.engine.limit_spec import LimitSpec

# How an algorithm measures its period: whole seconds (period_s), a day/week/month in the customer's time zone
# ("zoned": its windows are calendar windows), or not at all.
PeriodKind = Literal["seconds", "zoned", "none"]
# How the quality audit (apps/quality/analysis) judges decisions: one invariant check per kind (lease_set: leases
# held at once; lease_time: seconds of lease time per window).
AuditKind = Literal["window", "log", "sliding_counter", "bucket", "lease_set", "lease_time"]
# Local+global counting (enforcement's hybrid sync): which window the instances exchange, or None.
HybridWindow = Literal["fixed", "sliding"] | None


class Model(Protocol):
    """The functions of a reference model module (see apps/engine/reference/__init__.py)."""

    def evaluate(self, state: Any, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
        """(admits, retry_after_ms or None when the cost can never pass) for `cost` (>= 1) at `now`."""
        ...

    def consume(self, state: Any, params: Params, now: int, cost: int, lease: Any = None) -> Any:
        """The state after spending `cost` at `now` (concurrency: holding `lease`)."""
        ...

    def report(self, state: Any, params: Params, now: int) -> tuple[int, int]:
        """(remaining units, milliseconds until full) at `now`."""
        ...

    def expires_at(self, state: Any, params: Params, now: int) -> int:
        """Epoch ms after which `state` means the same as no state at all."""
        ...


class Shaper(Protocol):
    """A model that may admit a check with a delay (a leaky bucket): what decide.py asks of it."""

    def evaluate(
        self, state: Any, params: Params, now: int, cost: int, max_wait_ms: int = 0
    ) -> tuple[bool, int | None]:
        """Admit when `cost` fits within `max_wait_ms`."""
        ...

    def delay(self, state: Any, params: Params, now: int, cost: int) -> int:
        """Milliseconds until `cost` fits (0: now)."""
        ...

    def need(self, params: Params, cumulative: int, cost: int, max_wait_ms: int) -> int:
        """An item's need on the state in an atomic batch."""
        ...

    def batch_retry(self, state: Any, params: Params, now: int, most: int) -> int | None:
        """When every item of an atomic batch would pass; None when never."""
        ...


class LeaseSet(Model, Protocol):
    """A model whose state is the set of leases itself (`lease_set`): what the lease scripts' Python twins
    (store/sessions.py, the memory store) ask of it. Members are "<b64 owner>.<random>"; expiries in epoch ms."""

    def live(self, state: Any, now: int) -> Any:
        """The leases not expired at `now`, as ((expires, member), ...)."""
        ...

    def allocations(self, state: Any, now: int) -> list[str]:
        """The members held until released (allocations)."""
        ...

    def owned(self, members: list[str], owner: str) -> list[str]:
        """The members of `owner` (its b64 part)."""
        ...

    def resync_changes(self, state: Any, now: int, held: int, owner: str) -> int:
        """How many allocations a resync of `owner` to `held` adds or drops."""
        ...

    def resync(self, state: Any, now: int, held: int, owner: str) -> Any:
        """The state with exactly `held` allocations of `owner`."""
        ...

    def renew(self, state: Any, now: int, member: str, ttl_ms: int) -> tuple[Any, int | None]:
        """(state, new expiry or None when the lease is gone)."""
        ...

    def release(self, state: Any, now: int, member: str) -> Any:
        """The state without `member`."""
        ...


class LeaseClock(Protocol):
    """A model counting the time leases are held (`lease_clock`): a renewal and a release settle it."""

    def evaluate(self, state: Any, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
        """Whether time is left (a renewal asks with cost 1)."""
        ...

    def renew(self, state: Any, params: Params, now: int, member: str, expires: int) -> Any:
        """The state with `member`'s session now ending at `expires`."""
        ...

    def release(self, state: Any, params: Params, now: int, member: str) -> Any:
        """The state with `member`'s session ended at `now`."""
        ...


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter an operator sets on a limit of this algorithm (the limits app builds YAML keys, admin
    fields and summaries from these). name: the Limit model field; kind: "int" or one of `choices`."""

    name: str
    help: str
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    required: bool = True


@dataclass(frozen=True, slots=True)
class Durability:
    """How a counter of the algorithm is recorded and rebuilt after a Redis loss (durability.py).

    windowed: records are kept per counter window and replayed at the window's start; otherwise per UTC
        minute, replayed at the minute's last millisecond (never later than now).
    record_bucket(spec, params, now): the start of the bucket a check at `now` adds its spending to.
    lookback_start(spec, params, now): the earliest time whose spending still shapes the counter.
    reach_ms(spec): how long after its bucket starts a record can still matter.
    stored(state, params): the rebuilt state as the Lua fragment stores it (store/seeds.py).
    replay_from(spec, since): the state the replay starts from (None: empty).
    live(state, params, now): the state as of now (drops what has aged out), before it is stored.

    check.lua holds the Lua half of record_bucket and lookback_start: a window per code, else the minute and a
    bucket's look-back (twice its drain time); an algorithm whose rule differs must say so there too.
    """

    windowed: bool
    record_bucket: Callable[[LimitSpec, Params, int], int]
    lookback_start: Callable[[LimitSpec, Params, int], int]
    reach_ms: Callable[[LimitSpec], int]
    stored: Callable[[Any, Params], str]
    replay_from: Callable[[LimitSpec, int], Any] | None = None
    live: Callable[[Any, Params, int], Any] | None = None


class _NotDurable:
    """The explicit declaration that an algorithm's counters are never rebuilt (LimitSpec refuses durable)."""

    def __repr__(self) -> str:
        return "NOT_DURABLE"


NOT_DURABLE = _NotDurable()


@dataclass(frozen=True, slots=True)
class Algorithm:
    """One algorithm, declared once (see the module docstring).

    name: what operators write (YAML, admin); label: how pages show it; code: its counter key segment and the
        branch of the check script (unique); key_names_period: the key carries the period (a new period
        starts a fresh counter); extra_keys: suffixes of further keys after the code (a log's running sum).
    period: how the period is given; burst: the limit takes a capacity above its rate (LimitSpec.burst);
        params: what an operator sets besides quantity and unit; fixed_unit: the one unit it counts, if any.
    leased: spent by leases, not checks (a plain check only looks); validate(spec): an error message or None.
    lease_set: its state is the set of leases itself (a lease is taken on it, a lease id names its key, the
        lease scripts keep it); lease_clock: it counts the seconds leases are held (a lease's record lists it,
        renewals are judged by it). Both are models of the same algorithm, seen as the lease machinery needs.
    refund: the fragment defines ALG.<code>.refund (refund.lua gives back a cluster reservation with it); only
        leased algorithms may say False (a check spends nothing on them).
    hybrid: the window hybrid counting exchanges for it, or None when it cannot be counted hybrid.
    audit: how the quality audit judges its decisions.
    """

    name: str
    label: str
    code: str
    model: Model
    fragments: tuple[str, ...]
    period: PeriodKind
    params: tuple[Param, ...]
    durability: Durability | _NotDurable
    refund: bool
    hybrid: HybridWindow
    audit: AuditKind
    summary: str
    burst: bool = False
    leased: bool = False
    key_names_period: bool = False
    extra_keys: tuple[str, ...] = ()
    fixed_unit: str | None = None
    shaper: Shaper | None = None
    validate: Callable[[LimitSpec], str | None] | None = None
    lease_set: LeaseSet | None = None
    lease_clock: LeaseClock | None = None

    @property
    def durable(self) -> bool:
        """Its counters can be rebuilt after a Redis loss (LimitSpec.durable may be set)."""
        return isinstance(self.durability, Durability)

    @property
    def holds_leases(self) -> bool:
        """Leases are taken on it: its counter is the set of leases held."""
        return self.lease_set is not None

    @property
    def counts_time(self) -> bool:
        """It counts the time leases are held (session time), not checks."""
        return self.lease_clock is not None

    @property
    def calendar_windows(self) -> bool:
        """Its windows are days, weeks or months in the customer's time zone (calendar_period), not seconds."""
        return self.period == "zoned"


# The parameters most algorithms share, as plain data.
PERIOD_SECONDS = Param("period_seconds", "The period in seconds (period: in limits.yaml: seconds or a name).", 1)
BURST = Param(
    "burst",
    "Bucket capacity (<code>burst:</code> in limits.yaml): the most one check may spend; empty means the limit.",
    1,
    required=False,
)


def window_stored(state: Any, params: Params) -> str:
    """A window counter as the window fragments store it (lib.lua's window_load): "<window start ms>:<used>"."""
    start, used = state
    return f"{start}:{used}"
