"""Slow webhook receivers do not stall accounting. Real workers as the README deploys them (the default queue with
beat, the deliveries queue on its own), a receiver that accepts and never answers and one that trickles a byte a
second: the usage flush keeps running every second while the deliveries are stuck, and every delivery is counted,
retried and finally failed, none left pending."""

import time

import pytest
from django.utils import timezone

from apps.alerts.models import AlertEvent, Delivery, JobOutcome, RuleKind
from apps.engine import ManualClock
from apps.engine.store.redis import RedisStore
from apps.usage.models import UsageMinute
from tests.alerts.factories import AlertRuleFactory, JobOutcomeFactory
from tests.support.celery_worker import beat_every_second, celery_worker, throwaway_broker
from tests.support.stalling_receiver import StallingReceiver
from tests.usage.factories import spend

WEBHOOK_TIMEOUT_S = 2
ATTEMPTS = 2
STUCK_JOBS = ("stuck_a", "stuck_b", "stuck_c")  # each fires both rules: 3 deliveries per receiver
# The flush runs every second here. Stalled behind deliveries, it waited ~60 s (the old soft time limit).
FLUSH_LAG_BOUND_S = 10
WAIT_S = 120
MINUTE_MS = 60_000
WORKER_ENV = {
    "QUOTA_ALERTS_WEBHOOK_ALLOW_PRIVATE": "true",  # the receivers listen on 127.0.0.1
    "QUOTA_ALERTS_WEBHOOK_TIMEOUT_S": str(WEBHOOK_TIMEOUT_S),
    "QUOTA_ALERTS_DELIVERY_ATTEMPTS": str(ATTEMPTS),
}


@pytest.fixture
def broker():
    with throwaway_broker() as url:
        yield url


@pytest.fixture
def every_second(transactional_db):
    """The flush and the alert job every second; the other beat jobs off."""
    beat_every_second("flush_usage", "evaluate_alerts")


@pytest.fixture
def receivers():
    with StallingReceiver() as silent, StallingReceiver(trickle_every_s=1.0, hold_s=WAIT_S) as trickling:
        for name in STUCK_JOBS:
            JobOutcomeFactory(name=name, failures_in_a_row=3)
        AlertRuleFactory(name="silent receiver", kind=RuleKind.JOB, threshold=1, webhook_url=silent.url)
        AlertRuleFactory(name="trickling receiver", kind=RuleKind.JOB, threshold=1, webhook_url=trickling.url)
        yield silent, trickling


@pytest.fixture
def workers(tmp_path, broker, redis_url, key_prefix, every_second, receivers):
    common = {"broker_url": broker, "redis_url": redis_url, "key_prefix": key_prefix, "pool": "prefork"}
    common |= {"concurrency": 2, "env": WORKER_ENV}
    accounting = celery_worker(tmp_path, queues="celery", name="accounting", **common)
    deliveries = celery_worker(tmp_path, queues="deliveries", beat=False, name="deliveries", **common)
    with accounting as first, deliveries as second:
        yield first, second


def flush_lag_s() -> float | None:
    """Seconds since the flush last succeeded (None before its first run)."""
    outcome = JobOutcome.objects.filter(name="flush_usage").first()
    return None if outcome is None else (timezone.now() - outcome.last_success_at).total_seconds()


def worker_logs(workers) -> str:
    return "\n".join(log_path.read_text(errors="replace")[-3000:] for _, log_path in workers)


@pytest.mark.slow
def test_the_flush_keeps_up_while_receivers_stall_and_every_delivery_ends_failed_after_its_attempts(
    workers, receivers, redis_client, key_prefix
) -> None:
    silent, trickling = receivers
    store = RedisStore(redis_client, key_prefix=key_prefix, clock=ManualClock(int(time.time() * 1000) - 5 * MINUTE_MS))
    worst_lag, spent_at, flushed_after = 0.0, None, None
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert all(process.poll() is None for process, _ in workers), worker_logs(workers)
        if (lag := flush_lag_s()) is not None:
            worst_lag = max(worst_lag, lag)
            assert worst_lag <= FLUSH_LAG_BOUND_S, f"the flush fell {lag:.0f} s behind:\n{worker_logs(workers)}"
        events = list(AlertEvent.objects.all())
        if spent_at is None and events:
            spend(store, customer="acct-during-stall")  # usage of a past minute, spent as the deliveries start
            spent_at = time.monotonic()
        if spent_at and flushed_after is None and UsageMinute.objects.filter(customer="acct-during-stall").exists():
            flushed_after = time.monotonic() - spent_at
        if (
            flushed_after is not None
            and len(events) == 6
            and Delivery.PENDING not in {e.webhook_status for e in events}
        ):
            break
        time.sleep(0.5)

    events = list(AlertEvent.objects.order_by("rule_name", "subject"))
    assert flushed_after is not None, f"usage spent during the stall never reached PostgreSQL:\n{worker_logs(workers)}"
    assert flushed_after <= FLUSH_LAG_BOUND_S
    assert worst_lag <= FLUSH_LAG_BOUND_S
    assert [(e.rule_name, e.subject, e.webhook_status, e.attempts) for e in events] == [
        (rule, f"job {job}", Delivery.FAILED, ATTEMPTS)
        for rule in ("silent receiver", "trickling receiver")
        for job in STUCK_JOBS
    ], worker_logs(workers)
    for event in events:
        assert event.last_error.startswith(f"gave up after {ATTEMPTS} attempts: webhook: ")
        assert f"did not answer within {WEBHOOK_TIMEOUT_S} s" in event.last_error
    assert (silent.connections, trickling.connections) == (3 * ATTEMPTS, 3 * ATTEMPTS)
