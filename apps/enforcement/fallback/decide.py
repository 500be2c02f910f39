"""What a check gets when Redis cannot answer: each limit follows its `on_store_failure` policy.

- open: admits (the limit is not counted while Redis is away).
- closed: the whole check is refused with 503 `store_unavailable`.
- database: counted in PostgreSQL in minute-aligned windows (a window of a minute, or the limit's own
  period when longer; calendar limits keep their calendar window), with atomic conditional upserts.
  Sub-minute rates are scaled to a minute, so bursts are not shaped while degraded.
- local: enforced in this process against the limit divided by the number of live API instances
  (instances heartbeat in PostgreSQL), so the overshoot across instances stays bounded.
A request_id is honoured by the database policy: a retry returns the first decision, counted once.
Time comes from this host's clock here: Redis, the usual source, is what is missing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction

from apps.common.exceptions import ApplicationError
from apps.enforcement import heartbeat
from apps.enforcement.models import FallbackCounter, FallbackRequest, InstanceHeartbeat
from apps.enforcement.specs import limit_spec_of
from apps.engine import CheckItem, KeyLayout, LimitResult, LimitSpec, MemoryStore, window_bounds
from apps.limits.models import Mode, StoreFailurePolicy
from apps.limits.snapshot import LimitConfig

MINUTE_MS = 60_000
fallback_layout = KeyLayout("fallback")  # keys of the database policy's windows (unblock.py reads them too)
_local_store = MemoryStore(key_prefix="local")

UPSERT_SQL = (
    "INSERT INTO {table} (key, window_start, window_end, used) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (key, window_start) DO UPDATE SET used = {table}.used + excluded.used "
    "WHERE {table}.used + excluded.used <= %s RETURNING used"
)


class StoreUnavailable(ApplicationError):
    code = "store_unavailable"
    status_code = 503


class _Refused(Exception):
    """Rolls the database policy's transaction back when one of its limits refuses."""


@dataclass(frozen=True)
class Window:
    start_ms: int
    end_ms: int
    quantity: int


@dataclass(frozen=True)
class FallbackDecision:
    allowed: bool
    retry_after_ms: int | None
    limits: tuple[LimitResult, ...]


def database_window(limit: LimitConfig, timezone: str, now_ms: int) -> Window:
    if limit.calendar_period:
        bounds = window_bounds(now_ms, timezone, limit.calendar_period)
        return Window(bounds[1], bounds[2], limit.quantity)
    period_ms = (limit.period_s or 60) * 1000
    if period_ms < MINUTE_MS:
        start = now_ms - now_ms % MINUTE_MS
        return Window(start, start + MINUTE_MS, limit.quantity * MINUTE_MS // period_ms)
    start = now_ms - now_ms % period_ms
    return Window(start, start + period_ms, limit.quantity)


def local_spec(limit: LimitConfig, instances: int) -> LimitSpec:
    """This instance's share of the limit: at least 1, so a tiny limit still admits somewhere."""
    share = max(1, limit.quantity // instances)
    burst = max(1, limit.burst // instances) if limit.burst else None
    # In-process and for the outage only: nothing to record for a rebuild.
    return dataclasses.replace(limit_spec_of(limit), quantity=share, burst=burst, durable=False)


def _ms(value: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)


def _count_in_database(item: CheckItem, limit: LimitConfig, now_ms: int) -> LimitResult:
    window = database_window(limit, item.timezone, now_ms)
    key = fallback_layout.counter_keys(limit_spec_of(limit), item)[0]
    cost = item.cost_of(limit.unit)
    table = connection.ops.quote_name(FallbackCounter._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            UPSERT_SQL.format(table=table), [key, _ms(window.start_ms), _ms(window.end_ms), cost, window.quantity]
        )
        row = cursor.fetchone()
    over = row is None or cost > window.quantity
    used = row[0] if row else window.quantity
    result = LimitResult(
        limit.name, limit.algorithm, limit.unit, window.quantity, max(window.quantity - used, 0),
        window.end_ms - now_ms, False, over,
    )  # fmt: skip
    if over:
        raise _Refused(result, cost > window.quantity)
    return result


def _replayed(item: CheckItem) -> bool | None:
    if not item.request_id:
        return None
    found = FallbackRequest.objects.filter(customer=item.customer, request_id=item.request_id).first()
    return found.allowed if found else None


def _remember(item: CheckItem, allowed: bool) -> None:
    if item.request_id:
        try:
            with transaction.atomic():
                FallbackRequest.objects.create(customer=item.customer, request_id=item.request_id, allowed=allowed)
        except IntegrityError:
            pass  # a concurrent retry recorded it first; its decision stands


def fallback_check(item: CheckItem, limits: Sequence[LimitConfig], *, now_ms: int | None = None) -> FallbackDecision:
    """Decide without Redis. Raises StoreUnavailable when an enforced limit's policy is `closed`."""
    now_ms = now_ms if now_ms is not None else time.time_ns() // 1_000_000
    enforced = [limit for limit in limits if limit.mode == Mode.ENFORCE]
    closed = [limit.name for limit in enforced if limit.on_store_failure == StoreFailurePolicy.CLOSED]
    if closed:
        raise StoreUnavailable(
            f"The counter store is unreachable and limit {closed[0]} refuses to decide without it; retry shortly."
        )
    replay = _replayed(item)
    if replay is not None:
        return FallbackDecision(replay, 0 if replay else None, ())
    by_policy = {
        policy: [limit for limit in enforced if limit.on_store_failure == policy] for policy in StoreFailurePolicy
    }
    decision = _decide(item, by_policy, now_ms)
    _remember(item, decision.allowed)
    return decision


def _decide(item: CheckItem, by_policy: dict[StoreFailurePolicy, list[LimitConfig]], now_ms: int) -> FallbackDecision:
    opened = [_unknown(limit) for limit in by_policy[StoreFailurePolicy.OPEN]]
    local_specs = [local_spec(limit, heartbeat.live_instances()) for limit in by_policy[StoreFailurePolicy.LOCAL]]
    local = _local_store.check(_dry(item), local_specs) if local_specs else None
    if local is not None and not local.allowed:
        return FallbackDecision(False, local.retry_after_ms, (*local.limits, *opened))
    database = by_policy[StoreFailurePolicy.DATABASE]
    if item.dry_run:
        # A dry run reads nothing it would have to write: database-counted limits are reported as unknown.
        opened += [_unknown(limit) for limit in database]
        database = []
    try:
        with transaction.atomic():
            counted = [_count_in_database(item, limit, now_ms) for limit in database]
    except _Refused as refused:
        result, never = refused.args
        return FallbackDecision(False, None if never else result.reset_ms, (result, *opened))
    if local is not None and not item.dry_run:
        local = _local_store.check(item, local_specs)
    return FallbackDecision(True, 0, (*counted, *(local.limits if local else ()), *opened))


def _dry(item: CheckItem) -> CheckItem:
    return CheckItem(
        customer=item.customer, operation=item.operation, resource=item.resource, attributes=item.attributes,
        costs=item.costs, ip=item.ip, dry_run=True, timezone=item.timezone,
    )  # fmt: skip


def _unknown(limit: LimitConfig) -> LimitResult:
    """An `open` limit while Redis is away: admitted, its remaining unknown (reported as full)."""
    return LimitResult(limit.name, limit.algorithm, limit.unit, limit.quantity, limit.quantity, 0, False, False)


REQUEST_ID_WINDOW = dt.timedelta(minutes=10)
HEARTBEAT_KEEP = dt.timedelta(hours=1)


def fallback_purge(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Delete degraded-mode rows nobody needs any more: finished windows, request ids past their
    10 minutes, and heartbeats of instances gone for an hour."""
    now = now or dt.datetime.now(tz=dt.UTC)
    counters, _ = FallbackCounter.objects.filter(window_end__lte=now).delete()
    requests, _ = FallbackRequest.objects.filter(created_at__lte=now - REQUEST_ID_WINDOW).delete()
    heartbeats, _ = InstanceHeartbeat.objects.filter(seen_at__lte=now - HEARTBEAT_KEEP).delete()
    return {"fallback_counters": counters, "fallback_requests": requests, "heartbeats": heartbeats}
