"""Retention of the decision log: whole day partitions past DECISION_LOG_RETENTION_DAYS are dropped."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection, transaction

from apps.quality.models import DecisionEvent, LogCheck
from apps.quality.services.partitions import DECISION_EVENTS, day_partitions
from apps.quality.services.purge import decision_log_purge
from apps.usage.services.partitions import day_create

pytestmark = pytest.mark.django_db(transaction=True)


def event(at: dt.datetime, entry_id: str) -> DecisionEvent:
    return DecisionEvent.objects.create(
        slot="qp:dlog:{c=acme}", entry_id=entry_id, at=at, kind="allow", customer="acme"
    )


def where(entry_id: str) -> str:
    """The partition holding the entry."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text FROM quality_decisionevent WHERE entry_id = %s", [entry_id])
        return cursor.fetchone()[0]


def test_days_past_retention_are_dropped_whole_and_the_rest_kept(settings) -> None:
    settings.DECISION_LOG_RETENTION_DAYS = 14
    now = dt.datetime.now(dt.UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    old_day = (now - dt.timedelta(days=20)).date()
    with transaction.atomic():
        day_create(connection, old_day, DECISION_EVENTS)
    old = event(now - dt.timedelta(days=20), "1-0")
    edge = event(now - dt.timedelta(days=14, hours=1), "2-0")  # in the cutoff's own day, past it: to DEFAULT
    kept = event(now - dt.timedelta(days=13), "3-0")
    fresh = event(now - dt.timedelta(hours=1), "4-0")
    LogCheck.objects.create(minute=int(old.at.timestamp()) // 60, customer="acme", operation="Put")
    assert where("1-0") == DECISION_EVENTS.partition_name(old_day)

    report = decision_log_purge(now=now)

    assert DECISION_EVENTS.partition_name(old_day) in report.partitions
    assert old_day not in {partition.day for partition in day_partitions(table=DECISION_EVENTS)}
    assert set(DecisionEvent.objects.values_list("entry_id", flat=True)) == {kept.entry_id, fresh.entry_id}
    assert edge.entry_id not in set(DecisionEvent.objects.values_list("entry_id", flat=True))
    assert report.checks == 1
    assert not LogCheck.objects.exists()
    # The kept days found in DEFAULT got their partitions.
    assert where("3-0") == DECISION_EVENTS.partition_name(kept.at.date())


def test_retention_zero_keeps_everything(settings) -> None:
    settings.DECISION_LOG_RETENTION_DAYS = 0
    event(dt.datetime.now(dt.UTC) - dt.timedelta(days=400), "1-0")

    report = decision_log_purge()

    assert report.partitions == ()
    assert DecisionEvent.objects.count() == 1
