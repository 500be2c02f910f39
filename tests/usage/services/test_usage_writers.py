"""Usage writers: a ledger that stops writing without a graceful exit is found once, counted, logged, and the
minutes it may have left short are marked in the usage API and the alert; one that was only cut off recovers."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from prometheus_client import REGISTRY

from apps.alerts.models import RuleKind
from apps.alerts.services.conditions import STORE_SUBJECT, store_findings
from apps.usage.models import UsageWriter
from apps.usage.services.writers import (
    incomplete_buckets,
    incomplete_minutes,
    usage_complete_before,
    writer_flushed,
    writer_stopped,
    writers_silent_check,
)
from tests.alerts.factories import AlertRuleFactory

pytestmark = pytest.mark.django_db
T = dt.datetime(2026, 3, 2, 9, 30, 10, tzinfo=dt.UTC)  # 10 s into a minute


def lost_total() -> float:
    return REGISTRY.get_sample_value("quota_usage_writers_lost_total") or 0.0


def minute_of(moment: dt.datetime) -> int:
    return int(moment.timestamp()) // 60


def test_a_writer_that_stops_without_deregistering_is_found_once_and_its_minutes_are_marked(caplog) -> None:
    writer_flushed(name="api-1:10:aa", interval_s=2, now=T)
    writer_flushed(name="api-2:11:bb", interval_s=2, now=T)
    writer_stopped(name="api-2:11:bb", now=T + dt.timedelta(seconds=1))  # a graceful exit: no loss
    before = lost_total()

    assert writers_silent_check(now=T + dt.timedelta(seconds=20)).found == [], "not silent yet"
    with caplog.at_level(logging.WARNING, logger="apps.usage.services.writers"):
        found = writers_silent_check(now=T + dt.timedelta(minutes=2)).found
    again = writers_silent_check(now=T + dt.timedelta(minutes=3)).found

    assert [name.split(" ")[0] for name in found] == ["api-1:10:aa"]
    assert again == []
    assert lost_total() - before == 1
    assert "api-1:10:aa" in caplog.text
    # From the minute before its last round to the one it had to write again in.
    assert incomplete_minutes(0, 2**40) == {minute_of(T) - 1, minute_of(T)}
    hours = incomplete_buckets(granularity="hour", start=T - dt.timedelta(hours=3), end=T + dt.timedelta(hours=3))
    assert hours == [T.replace(minute=0, second=0)]


def test_a_writer_cut_off_from_postgresql_that_writes_again_is_no_longer_marked() -> None:
    writer_flushed(name="api-1:10:aa", interval_s=2, now=T)
    writers_silent_check(now=T + dt.timedelta(minutes=2))

    writer_flushed(name="api-1:10:aa", interval_s=2, now=T + dt.timedelta(minutes=3))

    assert UsageWriter.objects.get().silent_since is None
    assert incomplete_minutes(0, 2**40) == set()


def test_usage_is_complete_up_to_the_slowest_writer_still_writing() -> None:
    writer_flushed(name="api-1:10:aa", interval_s=2, now=T)
    writer_flushed(name="api-2:11:bb", interval_s=2, now=T + dt.timedelta(minutes=5))

    assert usage_complete_before(now=T + dt.timedelta(minutes=5)) == minute_of(T) - 1


def test_the_usage_api_and_the_store_alert_carry_the_mark(api, settings) -> None:
    writer_flushed(name="api-1:10:aa", interval_s=2, now=T)
    writers_silent_check(now=T + dt.timedelta(minutes=2))
    rule = AlertRuleFactory(kind=RuleKind.STORE, threshold=1000, window_minutes=60)

    body = api.get("/api/v1/usage", {"granularity": "minute", "from": "2026-03-02T09:00:00Z",
                                     "to": "2026-03-02T10:00:00Z"}).json()  # fmt: skip
    findings = store_findings(rule, now=T + dt.timedelta(minutes=3), store_probe=list)

    assert body["possibly_incomplete"] == ["2026-03-02T09:29:00+00:00", "2026-03-02T09:30:00+00:00"]
    assert "stopped without a graceful exit" in findings[STORE_SUBJECT].message
