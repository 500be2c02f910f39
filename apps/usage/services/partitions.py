"""UsageMinute partitioned by UTC day on PostgreSQL (migration 0007): creating day partitions ahead, moving
rows out of the DEFAULT partition, dropping whole days past retention.

Layout: the parent `usage_usageminute` (PARTITION BY RANGE (bucket)), one partition per UTC day named
`usage_usageminute_pYYYYMMDD` holding [day 00:00, next day 00:00), and `usage_usageminute_default` for a
row whose day has no partition yet (a minute flushed late right after the first migrate, a clock far off):
such a row is never refused nor lost. Creating a partition for a day the DEFAULT partition holds rows of
would fail (PostgreSQL refuses a bound that DEFAULT's rows violate), so `_day_create` first moves those
rows aside and adds them back through the parent once the partition exists, all in one transaction.

Partitions are made by usage_partitions_ensure: yesterday to DAYS_AHEAD days ahead, from the flush (every
minute; a catalog read when nothing is missing), the purge and after every migrate (apps.py), the purge
and migrate also adopting every day found in DEFAULT. DDL on a partitioned table takes an ACCESS
EXCLUSIVE lock on it, so it waits at most LOCK_TIMEOUT behind a long export and gives up until the next
run: meanwhile rows go to DEFAULT and are moved out later. On SQLite (the embedded default) the table is a
plain table and every function here does nothing.

The same helpers serve any table partitioned this way (a `DayTable`: its parent, its partition key column, a
label for the logs), e.g. apps/quality's decision log; every function takes `table=`, UsageMinute's by default.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, OperationalError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

logger = logging.getLogger(__name__)

# The SQL below names these tables literally (the model's db_table, which a test checks).
PARENT = "usage_usageminute"
DEFAULT_PARTITION = f"{PARENT}_default"
# Days created ahead of today: a day partition exists three days before its first row, so a purge or a
# flush job stopped for up to that long still finds today's partition there.
DAYS_AHEAD = 3
# How long partition DDL waits for its lock before leaving the work to the next run (module docstring).
LOCK_TIMEOUT = "5s"
# Any constant works; it only has to differ from the other advisory locks (the rollup's is "usag").
PARTITION_LOCK_ID = 0x7570_6172  # "upar"
DAY = dt.timedelta(days=1)


@dataclass(frozen=True, slots=True)
class DayTable:
    """A table partitioned by UTC day on `column` (a timestamptz), with a DEFAULT partition `<parent>_default`
    and one `<parent>_pYYYYMMDD` per day. Names are constants of our code, never input: the SQL formats them in."""

    parent: str
    column: str
    label: str

    @property
    def default(self) -> str:
        return f"{self.parent}_default"

    def partition_name(self, day: dt.date) -> str:
        return f"{self.parent}_p{day:%Y%m%d}"

    def day_of(self, name: str) -> dt.date | None:
        found = re.match(rf"^{re.escape(self.parent)}_p(\d{{8}})$", name)
        return dt.date.fromisoformat(found.group(1)) if found else None


USAGE_MINUTES = DayTable(PARENT, "bucket", "usage")


@dataclass(frozen=True, slots=True)
class DayPartition:
    """One UTC day's partition: rows with day 00:00 <= bucket < next day 00:00."""

    name: str
    day: dt.date

    @property
    def start(self) -> dt.datetime:
        return dt.datetime.combine(self.day, dt.time(), tzinfo=dt.UTC)

    @property
    def end(self) -> dt.datetime:
        return self.start + DAY


def partition_name(day: dt.date, table: DayTable = USAGE_MINUTES) -> str:
    return table.partition_name(day)


def partitioned(using: str = DEFAULT_DB_ALIAS, table: DayTable = USAGE_MINUTES) -> bool:
    """Whether `table` (UsageMinute's by default) is a partitioned table here (PostgreSQL, migrated)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [table.parent])
        found = cursor.fetchone()
    return found is not None and found[0] == "p"


def day_partitions(using: str = DEFAULT_DB_ALIAS, table: DayTable = USAGE_MINUTES) -> list[DayPartition]:
    """The day partitions there are, oldest first (DEFAULT not included)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT child.relname FROM pg_inherits JOIN pg_class child ON child.oid = pg_inherits.inhrelid "
            "WHERE pg_inherits.inhparent = to_regclass(%s)",
            [table.parent],
        )
        names = [name for (name,) in cursor.fetchall()]
    days = [(name, table.day_of(name)) for name in names]
    found = [DayPartition(name, day) for name, day in days if day is not None]
    return sorted(found, key=lambda partition: partition.day)


def usage_partitions_ensure(
    *, today: dt.date | None = None, adopt: bool = False, using: str = DEFAULT_DB_ALIAS, table: DayTable = USAGE_MINUTES
) -> list[str]:
    """Create the day partitions from yesterday to DAYS_AHEAD days after `today` (UTC) that are missing, and
    with `adopt` one for every day the DEFAULT partition holds rows of; the names created.

    Gives up (logs, returns []) if the table stays locked LOCK_TIMEOUT: the next run tries again.
    """
    if not partitioned(using, table):
        return []
    today = today or timezone.now().astimezone(dt.UTC).date()
    wanted = {today + offset * DAY for offset in range(-1, DAYS_AHEAD + 1)}
    if adopt:
        wanted |= _days_in_default(using, table)
    if not wanted - {partition.day for partition in day_partitions(using, table)}:
        return []
    try:
        return _create_missing(wanted, using, table)
    except OperationalError as error:
        logger.warning("%s partitions: not created this time, %s; rows wait in %s", table.label, error, table.default)
        return []


def _create_missing(wanted: set[dt.date], using: str, table: DayTable) -> list[str]:
    connection = connections[using]
    with transaction.atomic(using=using), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PARTITION_LOCK_ID])
        # The parent first, as every writer does (then the partition it routes to): no deadlock with them.
        cursor.execute(f"LOCK TABLE {table.parent} IN ACCESS EXCLUSIVE MODE")
        missing = sorted(wanted - {partition.day for partition in day_partitions(using, table)})
        moved = sum(day_create(connection, day, table) for day in missing)
    names = [table.partition_name(day) for day in missing]
    logger.info("%s partitions: created %s, %d rows moved out of %s", table.label, names, moved, table.default)
    return names


def day_create(connection: BaseDatabaseWrapper, day: dt.date, table: DayTable = USAGE_MINUTES) -> int:
    """Create `day`'s partition, moving its rows out of DEFAULT first (module docstring); how many moved.

    The caller holds the parent's lock, so no row of that day can reach DEFAULT meanwhile.
    """
    partition = DayPartition(table.partition_name(day), day)
    bounds = [partition.start, partition.end]
    # Table and column names are DayTable constants of our code, never input (hence the noqa: S608 below).
    in_day = f"{table.column} >= %s AND {table.column} < %s"
    moving = f"{table.parent}_moving"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table.default} WHERE {in_day}", bounds)  # noqa: S608
        (waiting,) = cursor.fetchone()
        if waiting:
            cursor.execute(f"CREATE TEMPORARY TABLE {moving} (LIKE {table.parent}) ON COMMIT DROP")
            moved = f"WITH moved AS (DELETE FROM {table.default} WHERE {in_day} RETURNING *) "  # noqa: S608
            cursor.execute(moved + f"INSERT INTO {moving} SELECT * FROM moved", bounds)  # noqa: S608
        # Bounds are dates formatted here, not input: DDL takes no parameters.
        cursor.execute(
            f"CREATE TABLE {partition.name} PARTITION OF {table.parent} "
            f"FOR VALUES FROM ('{partition.start.isoformat()}') TO ('{partition.end.isoformat()}')"
        )
        if waiting:
            cursor.execute(f"INSERT INTO {table.parent} SELECT * FROM {moving}")  # noqa: S608
            cursor.execute(f"DROP TABLE {moving}")
    return int(waiting)


def _days_in_default(using: str, table: DayTable) -> set[dt.date]:
    with connections[using].cursor() as cursor:
        sql = f"SELECT DISTINCT ({table.column} AT TIME ZONE 'UTC')::date FROM {table.default}"  # noqa: S608
        cursor.execute(sql)
        return {day for (day,) in cursor.fetchall()}


def usage_partitions_drop(
    *, before: dt.datetime, using: str = DEFAULT_DB_ALIAS, table: DayTable = USAGE_MINUTES
) -> tuple[list[str], int]:
    """Drop the day partitions that end at or before `before`: their names, and about how many rows went
    (PostgreSQL's estimate, pg_class.reltuples, kept by autovacuum: counting a day of rows exactly would read
    all of it, which dropping it avoids). Gives up like usage_partitions_ensure; the next purge drops them."""
    if not partitioned(using, table):
        return [], 0
    old = [partition for partition in day_partitions(using, table) if partition.end <= before]
    if not old:
        return [], 0
    try:
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PARTITION_LOCK_ID])
            names = [partition.name for partition in old]
            cursor.execute("SELECT sum(greatest(reltuples, 0)) FROM pg_class WHERE relname = ANY(%s)", [names])
            (rows,) = cursor.fetchone()
            # DROP detaches and deletes in one step, under the same lock DETACH takes.
            cursor.execute("DROP TABLE " + ", ".join(names))
    except OperationalError as error:
        logger.warning("%s partitions: none dropped this time, %s", table.label, error)
        return [], 0
    logger.info("%s partitions: dropped %s (past retention)", table.label, names)
    return names, int(rows or 0)
