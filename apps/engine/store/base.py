"""The Store protocol: what the platform calls to decide checks, whichever store is behind it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from apps.engine.durability import is_record_field, parse_record_field
from apps.engine.keys import KeyLayout
from apps.engine.limit_spec import LimitSpec
from apps.engine.types import BatchMode, CheckItem, Decision, Resynced

# What checks spent on durable counters: (counter key without the store prefix, bucket start ms) -> amount.
Records = dict[tuple[str, int], int]


@dataclass(frozen=True, slots=True)
class UsageRow:
    """Usage of one customer x operation x calling service x API key prefix during one UTC minute (minute =
    epoch_ms // 60000), with what its admitted checks spent on durable counters (`records`, see durability.py).
    `service` and `api_key` are "" for checks made without them and for usage keys of the old layout (keys.py)."""

    customer: str
    operation: str
    minute: int
    allowed: int = 0
    denied: int = 0
    shadow_denied: int = 0
    costs: dict[str, int] = field(default_factory=dict)
    records: Records = field(default_factory=dict)
    session_ms: int = 0  # lease time held in the minute (store/sessions.py)
    logged: int = 0  # decisions written to the decision log (decision_log.py), to check the log lost none
    service: str = ""  # the calling service's name
    api_key: str = ""  # the calling key's prefix (never its secret)


class Store(Protocol):
    """Decides checks atomically and counts usage in the same step."""

    def check(self, item: CheckItem, limits: Sequence[LimitSpec]) -> Decision:
        """Decide one check against `limits` (all or nothing; one round trip in Redis)."""
        ...

    def check_batch(
        self, pairs: Sequence[tuple[CheckItem, Sequence[LimitSpec]]], mode: BatchMode = "independent"
    ) -> list[Decision]:
        """Decide checks in order: each on its own ("independent") or all or none ("atomic")."""
        ...

    def lease_acquire(
        self, item: CheckItem, limit: LimitSpec, ttl_s: int | None, others: Sequence[LimitSpec] = ()
    ) -> tuple[Decision, str | None, int]:
        """Take a slot of concurrency `limit` for ttl_s seconds (with `others` checked in the same step); ttl_s
        None: an allocation, held until released (reference/concurrency.py; `others` may not hold session_time).

        Returns (decision, lease_id or None, expires_at_ms or 0; an allocation's: reference/concurrency.FOREVER).
        """
        ...

    def allocations_set(self, item: CheckItem, limit: LimitSpec, held: int) -> Resynced:
        """Make `item.customer` hold exactly `held` allocations in the counter of concurrency `limit`, from the
        caller's own count (reference/concurrency.resync; the other customers' members are kept); return how many it
        held before and which it holds now. Raises ResyncTooLarge, writing nothing, when that adds or drops more than
        MAX_RESYNC_CHANGES."""
        ...

    def lease_renew(self, lease_id: str, ttl_s: int) -> int | None:
        """Extend a live lease to now + ttl_s; return its new expiry, or None if expired or unknown. Raises
        SessionTimeSpent (nothing moves) when a session_time limit the lease counts against is spent."""
        ...

    def lease_release(self, lease_id: str) -> None:
        """Give a lease back (idempotent; unknown and malformed ids are ignored)."""
        ...

    def names_admit(self, service: str, names: Sequence[str], per_day: int) -> list[bool]:
        """May `service` bring in each of these new names ("<kind>:<name>") today? At most `per_day` a UTC
        day; one admitted stays admitted that day (apps/engine/name_budget.py). One round trip for all."""
        ...

    def now_hint_ms(self) -> int:
        """Now without a round trip: for decisions made without the store (failure policies)."""
        ...

    def counters_forget(self, counters: Sequence[str]) -> None:
        """Delete `counters` (keys without the store prefix) and start a new epoch: durable counters missing
        then are rebuilt from their records when next needed."""
        ...

    def usage_minutes(self) -> list[int]:
        """The minutes that have usage waiting to be collected, oldest first."""
        ...

    def usage_rows(self, minute: int) -> list[UsageRow]:
        """The usage counted during `minute`."""
        ...

    def usage_discard(self, minute: int) -> None:
        """Forget the usage of `minute` (after it has been stored elsewhere)."""
        ...


def usage_row(layout: KeyLayout, key: str, counters: dict[str, int]) -> UsageRow:
    """The UsageRow of usage hash `key` holding `counters` (allowed, denied, shadow_denied, cost:<unit>,
    session_ms, logged, and record fields). A usage hash of another tag than a customer's (a Redis Cluster slot's part
    of a check, store/slots.py) only holds records: its row has no customer and no counts."""
    if layout.is_away_usage_key(key):
        operation, minute = layout.parse_away_usage_key(key)
        return UsageRow("", operation, minute, records=_records(layout, counters))
    customer, operation, service, api_key, minute = layout.parse_usage(key)
    costs = {name[5:]: amount for name, amount in counters.items() if name.startswith("cost:")}
    allowed, denied, shadow = (counters.get(name, 0) for name in ("allowed", "denied", "shadow_denied"))
    records, session_ms = _records(layout, counters), counters.get("session_ms", 0)
    logged = counters.get("logged", 0)
    return UsageRow(
        customer, operation, minute, allowed, denied, shadow, costs, records, session_ms, logged, service, api_key
    )


def _records(layout: KeyLayout, counters: dict[str, int]) -> Records:
    records: Records = {}
    for name, amount in counters.items():
        if is_record_field(name):
            key, start = parse_record_field(name)
            records[(layout.counter_id(key), start)] = amount
    return records
