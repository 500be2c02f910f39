"""The loss check: drained entries against UsageMinute.logged of the same flushed minutes."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from prometheus_client import REGISTRY

from apps.quality.models import LogCheck
from apps.quality.services.jobs import decision_log_drain_job
from apps.quality.services.losses import MARGIN_MINUTES, log_losses_check
from apps.usage.models import FlushedMinute, UsageMinute, UsageWriter
from tests.quality.logs import MINUTE_MS, decision, drain, minute_ms, stream_of, write

pytestmark = pytest.mark.django_db(transaction=True)


def lost_total() -> float:
    return REGISTRY.get_sample_value("quota_decision_log_lost_total") or 0.0


def flushed(minute_start_ms: int, customer: str, logged: int, allowed: int) -> None:
    """What the usage flush leaves for a minute whose script logged `logged` decisions."""
    bucket = dt.datetime.fromtimestamp(minute_start_ms / 1000, tz=dt.UTC)
    UsageMinute.objects.create(
        customer=customer, operation="PutRecords", bucket=bucket, allowed=allowed, logged=logged, costs={}
    )
    FlushedMinute.objects.get_or_create(minute=minute_start_ms // MINUTE_MS)


def test_an_entry_trimmed_by_the_cap_before_the_drain_is_found_lost(redis_client, key_prefix) -> None:
    minute = minute_ms(dt.datetime.now(dt.UTC)) - 10 * MINUTE_MS
    write(redis_client, key_prefix, *[decision(minute + n) for n in range(3)])
    redis_client.xtrim(stream_of(key_prefix), maxlen=2, approximate=False)  # the cap took the oldest
    flushed(minute, "acme", logged=3, allowed=3)
    before = lost_total()
    drain(redis_client, key_prefix)

    report = log_losses_check(drained_at_ms=minute + 5 * MINUTE_MS)

    assert (report.minutes, report.logged, report.drained, report.lost, report.surplus) == (1, 3, 2, 1, 0)
    assert "1 entries LOST" in report.summary
    assert "acme PutRecords @ " in report.summary
    row = LogCheck.objects.get(minute=minute // MINUTE_MS, customer="acme")
    assert (row.usage_logged, row.drained, row.difference) == (3, 2, 1)
    assert lost_total() - before == 1


def test_a_whole_log_shows_no_difference_and_a_minute_is_checked_once(redis_client, key_prefix) -> None:
    minute = minute_ms(dt.datetime.now(dt.UTC)) - 10 * MINUTE_MS
    write(redis_client, key_prefix, decision(minute), decision(minute + 1, "deny"))
    write(redis_client, key_prefix, decision(minute + 2, customer="bob"), customer="bob")
    flushed(minute, "acme", logged=2, allowed=1)
    flushed(minute, "bob", logged=1, allowed=1)
    drain(redis_client, key_prefix)

    first = log_losses_check(drained_at_ms=minute + 5 * MINUTE_MS)
    again = log_losses_check(drained_at_ms=minute + 6 * MINUTE_MS)

    assert (first.minutes, first.logged, first.drained, first.lost, first.surplus) == (1, 3, 3, 0, 0)
    assert "LOST" not in first.summary
    assert again.minutes == 0
    assert set(LogCheck.objects.values_list("customer", "difference")) == {("acme", 0), ("bob", 0), ("", 0)}


def test_minutes_too_recent_or_not_written_by_every_ledger_wait(redis_client, key_prefix) -> None:
    minute = minute_ms(dt.datetime.now(dt.UTC)) - 10 * MINUTE_MS
    flushed(minute, "acme", logged=1, allowed=1)
    # A process still writing whose last round came 10 s into the minute after: that minute may lack its decisions.
    last_round = dt.datetime.fromtimestamp((minute + MINUTE_MS) / 1000 + 70, tz=dt.UTC)
    UsageWriter.objects.create(name="api-1", flushed_at=last_round, interval_s=2)
    unflushed = minute + MINUTE_MS
    UsageMinute.objects.create(
        customer="acme", operation="PutRecords", bucket=dt.datetime.fromtimestamp(unflushed / 1000, tz=dt.UTC),
        logged=1, costs={},
    )  # fmt: skip

    too_early = log_losses_check(drained_at_ms=minute + MARGIN_MINUTES * MINUTE_MS)
    on_time = log_losses_check(drained_at_ms=minute + (MARGIN_MINUTES + 3) * MINUTE_MS)

    assert too_early.minutes == 0
    assert (on_time.minutes, on_time.lost) == (1, 1)
    assert not LogCheck.objects.filter(minute=unflushed // MINUTE_MS).exists()


def test_more_drained_than_logged_is_reported_as_surplus_not_loss(redis_client, key_prefix) -> None:
    minute = minute_ms(dt.datetime.now(dt.UTC)) - 10 * MINUTE_MS
    write(redis_client, key_prefix, decision(minute), decision(minute + 1))
    flushed(minute, "acme", logged=1, allowed=2)
    drain(redis_client, key_prefix)
    before = lost_total()

    report = log_losses_check(drained_at_ms=minute + 5 * MINUTE_MS)

    assert (report.lost, report.surplus) == (0, 1)
    assert lost_total() == before


def lost_minute(redis_client, key_prefix, minute: int, customer: str, *, drained_before: bool = False) -> None:
    """Three decisions of `customer` in `minute`, the oldest trimmed by the stream's cap, and the usage flushed
    (after a drain took the other two, if `drained_before`: the next drain then reads nothing)."""
    write(redis_client, key_prefix, *[decision(minute + n, customer=customer) for n in range(3)], customer=customer)
    redis_client.xtrim(stream_of(key_prefix, customer), maxlen=2, approximate=False)
    if drained_before:
        drain(redis_client, key_prefix)
    flushed(minute, customer, logged=3, allowed=3)


def test_every_drain_whose_loss_check_finds_lost_entries_warns(settings, redis_client, key_prefix, caplog) -> None:
    settings.QUOTA_KEY_PREFIX = key_prefix
    minute = minute_ms(dt.datetime.now(dt.UTC)) - 10 * MINUTE_MS
    lost_minute(redis_client, key_prefix, minute, "acme")
    caplog.set_level(logging.DEBUG)

    first = decision_log_drain_job()
    lost_minute(redis_client, key_prefix, minute + MINUTE_MS, "bob", drained_before=True)
    second = decision_log_drain_job()

    assert (first.losses.lost, second.losses.lost) == (1, 1)
    assert second.drain.read == 0, "an idle drain, which logs its own summary at debug"
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 2, "each drain that finds a loss says so, not only the first"
    assert "1 entries LOST" in warnings[0]
    assert "acme PutRecords @ " in warnings[0]
    assert "bob PutRecords @ " in warnings[1]


def test_a_drain_that_finds_nothing_lost_does_not_warn(settings, redis_client, key_prefix, caplog) -> None:
    settings.QUOTA_KEY_PREFIX = key_prefix
    minute = minute_ms(dt.datetime.now(dt.UTC)) - 10 * MINUTE_MS
    write(redis_client, key_prefix, decision(minute))
    flushed(minute, "acme", logged=1, allowed=1)
    caplog.set_level(logging.DEBUG)

    report = decision_log_drain_job()

    assert (report.losses.minutes, report.losses.lost) == (1, 0)
    assert [record for record in caplog.records if record.levelno >= logging.WARNING] == []
