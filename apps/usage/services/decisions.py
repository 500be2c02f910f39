"""Adding the decisions made without the counter store (access rules, the failure policies while Redis is
away) into UsageMinute, beside what the flush brings from the store.

The counts are added into the same rows as the flush's (minutes.py: additive, atomic per row), and each
minute written gets a RollupMark, so the next rollup recomputes its hour and day even if the minute was
rolled up already, or is never flushed at all (no check reached Redis in it). A FlushedMinute claim would
be wrong here: it tells the flush that the store's usage of the minute is in already, to be discarded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields

from django.db import connection, transaction

from apps.usage.models import RollupMark, UsageMinute
from apps.usage.services.flush import minute_start
from apps.usage.services.minutes import usage_minutes_add
from apps.usage.vocabulary import BY_NAME

MARK_SQL = (
    "INSERT INTO {table} (minute, version) VALUES (%s, 1) "
    "ON CONFLICT (minute) DO UPDATE SET version = {table}.version + 1"
)


@dataclass(frozen=True, slots=True)
class DecisionCounts:
    """Decisions of one customer × operation × calling service × API key prefix in one UTC minute
    (epoch_ms // 60000); `service` and `api_key` are "" for a check made without them.

    Every decision is one of allowed, denied (by a limit), rule_denied (by an access rule: a deny rule or
    an inactive customer) and unavailable (503: a `closed` limit while Redis is away); shadow_denied and
    degraded (decided without Redis) count a part of allowed and denied again. `costs` is what the
    allowed ones admitted, per unit. `logged`: the decision log entries they wrote (limits with audit on).
    """

    customer: str
    operation: str
    minute: int
    allowed: int = 0
    denied: int = 0
    shadow_denied: int = 0
    degraded: int = 0
    rule_denied: int = 0
    unavailable: int = 0
    logged: int = 0
    local_denied: int = 0  # a part of denied: refused by the caller's SDK local limiter (POST /api/v1/sync)
    costs: Mapping[str, int] = field(default_factory=dict)
    service: str = ""
    api_key: str = ""

    def __post_init__(self) -> None:
        counts = [getattr(self, name) for name in COUNTED] + list(self.costs.values())
        if self.minute < 0 or any(count < 0 for count in counts):
            raise ValueError(f"Decision counts cannot be negative: {self!r}")

    @property
    def empty(self) -> bool:
        return not any(getattr(self, name) for name in COUNTED) and not any(self.costs.values())


# The usage counters (vocabulary.py) a decision made without the store can add to: the fields above that name one.
COUNTED = tuple(item.name for item in fields(DecisionCounts) if item.name in BY_NAME)


@transaction.atomic
def usage_decisions_add(*, rows: Iterable[DecisionCounts]) -> int:
    """Add `rows` into UsageMinute (rows with the same customer, operation, service, key and minute are summed;
    empty ones are skipped) and mark their minutes for the next rollup; how many UsageMinute rows were added into."""
    counted = [row for row in rows if not row.empty]
    added = usage_minutes_add(rows=[_minute_row(row) for row in counted])
    _marks_bump(sorted({row.minute for row in counted}))
    return added


def _minute_row(row: DecisionCounts) -> UsageMinute:
    return UsageMinute(
        customer=row.customer,
        operation=row.operation,
        service=row.service,
        api_key=row.api_key,
        bucket=minute_start(row.minute),
        costs={unit: amount for unit, amount in row.costs.items() if amount},
        **{name: getattr(row, name) for name in COUNTED},
    )


def _marks_bump(minutes: list[int]) -> None:
    """A RollupMark for each minute, or a newer version of it; in minute order, like every writer of marks."""
    if minutes:
        table = connection.ops.quote_name(RollupMark._meta.db_table)
        with connection.cursor() as cursor:
            cursor.executemany(MARK_SQL.format(table=table), [(minute,) for minute in minutes])
