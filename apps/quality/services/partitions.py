"""The decision log's table partitioned by UTC day on `at` (PostgreSQL), with apps/usage's generic helpers.

Same layout as UsageMinute's (apps/usage/services/partitions.py): `quality_decisionevent_pYYYYMMDD` per day,
`quality_decisionevent_default` for an entry whose day has no partition yet (an entry drained late, a clock far
off), moved out when its day's partition is made. The drain makes yesterday to a few days ahead before it
inserts; the purge drops whole days past DECISION_LOG_RETENTION_DAYS and adopts the days found in DEFAULT.
On SQLite the table is a plain one and these do nothing.
"""

from __future__ import annotations

import datetime as dt

from apps.usage.services.partitions import DayTable, day_partitions, partitioned, usage_partitions_drop
from apps.usage.services.partitions import usage_partitions_ensure as _ensure

__all__ = ["DECISION_EVENTS", "day_partitions", "log_partitions_drop", "log_partitions_ensure", "partitioned"]

DECISION_EVENTS = DayTable("quality_decisionevent", "at", "decision log")


def log_partitions_ensure(*, today: dt.date | None = None, adopt: bool = False) -> list[str]:
    """The day partitions of the decision log from yesterday to a few days ahead (and, with `adopt`, of every
    day waiting in DEFAULT); the names created."""
    return _ensure(today=today, adopt=adopt, table=DECISION_EVENTS)


def log_partitions_drop(*, before: dt.datetime) -> tuple[list[str], int]:
    """Drop the decision log's day partitions ending at or before `before`: names, estimated rows."""
    return usage_partitions_drop(before=before, table=DECISION_EVENTS)
