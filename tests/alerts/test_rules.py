"""Each kind of rule fires once when its threshold is crossed, stays quiet while it holds, and resolves once."""

import dataclasses
import datetime as dt
import socket

import pytest
import redis
from django.core import mail

from apps.alerts.models import AlertEvent, AlertRule, EventKind, JobOutcome, RuleKind
from apps.alerts.services.evaluation import alerts_evaluate
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.engine.store.redis import RedisStore
from apps.ops.jobs import JOBS, evaluate_alerts, job_run
from apps.usage.models import UsageMinute
from tests.alerts.factories import AlertRuleFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 3, 2, 10, 30, 20, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


def minute_ago(minutes: int) -> dt.datetime:
    return NOW.replace(second=0) - minutes * MINUTE


def history(rule: AlertRule) -> list[tuple[str, str]]:
    return [(event.kind, event.subject) for event in AlertEvent.objects.filter(rule=rule).order_by("pk")]


def check(api, customer: str, operation: str, times: int) -> None:
    for _ in range(times):
        api.post("/api/v1/check", {"customer": customer, "operation": operation}, format="json")


def test_a_customer_above_a_share_of_a_limit_fires_once_and_resolves_when_the_window_turns(api, clock) -> None:
    customer = CustomerFactory(external_id="acct-1")
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=10, period_seconds=60)
    rule = AlertRuleFactory(kind=RuleKind.USAGE, threshold=80, customer=customer)
    check(api, "acct-1", "ListStreams", 7)

    assert alerts_evaluate(now=NOW).fired == 0
    check(api, "acct-1", "ListStreams", 2)
    first, second = alerts_evaluate(now=NOW), alerts_evaluate(now=NOW)

    assert (first.fired, second.fired, second.firing) == (1, 0, 1)
    fired = AlertEvent.objects.get(rule=rule)
    assert (fired.subject, fired.value, fired.open) == ("acct-1 / streams", 90.0, True)
    assert "used 9 of 10 (90%) of limit streams on ListStreams" in fired.message

    clock.advance(60_000)
    assert alerts_evaluate(now=NOW).resolved == 1
    assert history(rule) == [("fired", "acct-1 / streams"), ("resolved", "acct-1 / streams")]
    assert AlertEvent.objects.get(kind=EventKind.RESOLVED).resolves == fired


def test_without_a_customer_every_active_customer_is_read_each_on_its_own(api) -> None:
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=10, period_seconds=60)
    rule = AlertRuleFactory(kind=RuleKind.USAGE, threshold=50)
    for customer, checks in (("acct-1", 6), ("acct-2", 2), ("acct-3", 10)):
        CustomerFactory(external_id=customer)
        UsageMinute.objects.create(customer=customer, operation="ListStreams", bucket=minute_ago(1), allowed=checks)
        check(api, customer, "ListStreams", checks)

    alerts_evaluate(now=NOW)

    assert history(rule) == [("fired", "acct-1 / streams"), ("fired", "acct-3 / streams")]


def test_usage_rules_neither_fire_nor_resolve_while_redis_cannot_be_read(api, key_prefix, clock) -> None:
    customer = CustomerFactory(external_id="acct-1")
    rule = AlertRuleFactory(kind=RuleKind.USAGE, threshold=10, customer=customer)
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=10, period_seconds=60)
    check(api, "acct-1", "ListStreams", 5)
    alerts_evaluate(now=NOW)
    dead = redis.Redis(port=_dead_port(), socket_connect_timeout=0.2)
    engine_store_use(RedisStore(dead, key_prefix=key_prefix, clock=clock))

    report = alerts_evaluate(now=NOW)

    assert "Redis did not answer" in report.errors[0]
    assert history(rule) == [("fired", "acct-1 / streams")]


def test_without_redis_usage_rules_say_they_need_it_instead_of_finding_everyone_at_zero(api, settings) -> None:
    """The embedded default: the alert job's process is not the API's, so its in-process counters are empty."""
    customer = CustomerFactory(external_id="acct-1")
    rule = AlertRuleFactory(kind=RuleKind.USAGE, threshold=10, customer=customer)
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=10, period_seconds=60)
    check(api, "acct-1", "ListStreams", 5)
    settings.REDIS_URL = settings.COUNTERS_REDIS_URL = ""

    outcome = job_run("evaluate_alerts")

    assert "1 could not be read" in outcome["summary"]
    assert f"{rule.name}: Usage-share alerts need Redis (production setup: set REDIS_URL)" in outcome["summary"]
    assert history(rule) == []


def test_denials_above_n_per_minute_for_an_operation_fire_once_then_resolve() -> None:
    rule = AlertRuleFactory(kind=RuleKind.DENIALS, threshold=20, operation=OperationFactory(name="PutRecords"))
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minute_ago(1), denied=15)
    UsageMinute.objects.create(customer="acct-2", operation="PutRecords", bucket=minute_ago(1), denied=10)
    UsageMinute.objects.create(customer="acct-3", operation="Other", bucket=minute_ago(1), denied=99)
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minute_ago(2), denied=5)

    for _ in range(3):
        alerts_evaluate(now=NOW)

    fired = AlertEvent.objects.get(rule=rule)
    assert (fired.subject, fired.value) == ("operation PutRecords", 25)
    alerts_evaluate(now=NOW + 2 * MINUTE)
    assert history(rule) == [("fired", "operation PutRecords"), ("resolved", "operation PutRecords")]


def test_denials_for_a_customer_count_only_that_customer_and_exactly_the_threshold_does_not_fire() -> None:
    customer = CustomerFactory(external_id="acct-1")
    rule = AlertRuleFactory(kind=RuleKind.DENIALS, threshold=20, customer=customer)
    UsageMinute.objects.create(customer="acct-1", operation="A", bucket=minute_ago(1), denied=20)
    UsageMinute.objects.create(customer="acct-2", operation="A", bucket=minute_ago(1), denied=500)

    alerts_evaluate(now=NOW)
    assert history(rule) == []

    UsageMinute.objects.create(customer="acct-1", operation="B", bucket=minute_ago(1), denied=1)
    alerts_evaluate(now=NOW)
    assert history(rule) == [("fired", "customer acct-1")]


def test_the_store_rule_fires_while_redis_does_not_answer_and_resolves_when_it_is_back(settings) -> None:
    rule = AlertRuleFactory(kind=RuleKind.STORE, threshold=0)
    live = settings.REDIS_URL

    settings.REDIS_URL = f"redis://127.0.0.1:{_dead_port()}/0"
    evaluate_alerts()
    evaluate_alerts()
    settings.REDIS_URL = live
    evaluate_alerts()

    assert history(rule) == [("fired", "counter store"), ("resolved", "counter store")]
    assert "redis: Redis did not answer PING" in AlertEvent.objects.get(kind=EventKind.FIRED).message


def test_the_store_rule_fires_on_checks_decided_without_redis() -> None:
    rule = AlertRuleFactory(kind=RuleKind.STORE, threshold=3)
    UsageMinute.objects.create(customer="a", operation="A", bucket=minute_ago(1), allowed=5, degraded=2)
    UsageMinute.objects.create(customer="b", operation="A", bucket=minute_ago(1), unavailable=2)

    alerts_evaluate(now=NOW)
    alerts_evaluate(now=NOW + 5 * MINUTE)

    assert history(rule) == [("fired", "counter store"), ("resolved", "counter store")]
    assert "4 checks were decided without Redis in one minute" in AlertEvent.objects.first().resolves.message


def test_a_failing_beat_job_fires_after_its_failures_in_a_row_and_resolves_on_its_next_success(monkeypatch) -> None:
    rule = AlertRuleFactory(kind=RuleKind.JOB, threshold=2, job="rollup_usage")
    job = JOBS["rollup_usage"]

    def broken():
        raise RuntimeError("disk full")

    monkeypatch.setitem(JOBS, "rollup_usage", dataclasses.replace(job, run=broken))
    for expected in ([], [("fired", "job rollup_usage")]):
        with pytest.raises(RuntimeError):
            job_run("rollup_usage")
        alerts_evaluate(now=NOW)
        assert history(rule) == expected
    assert JobOutcome.objects.get(name="rollup_usage").last_error == "RuntimeError: disk full"

    monkeypatch.setitem(JOBS, "rollup_usage", job)
    job_run("rollup_usage")
    alerts_evaluate(now=NOW)

    assert history(rule) == [("fired", "job rollup_usage"), ("resolved", "job rollup_usage")]
    assert JobOutcome.objects.get(name="rollup_usage").failures_in_a_row == 0


def test_email_goes_to_every_address_once_on_firing_and_once_on_resolution(
    eager_tasks, django_capture_on_commit_callbacks
) -> None:
    AlertRuleFactory(
        name="putrecords-denials", threshold=0, emails="ops@example.com,\noncall@example.com",
        operation=OperationFactory(name="PutRecords"),
    )  # fmt: skip
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minute_ago(1), denied=3)

    for now in (NOW, NOW, NOW + 5 * MINUTE, NOW + 5 * MINUTE):
        with django_capture_on_commit_callbacks(execute=True):
            alerts_evaluate(now=now)

    assert [message.subject for message in mail.outbox] == [
        "[Quota alert] FIRING: putrecords-denials: operation PutRecords",
        "[Quota alert] resolved: putrecords-denials: operation PutRecords",
    ]
    assert mail.outbox[0].to == ["ops@example.com", "oncall@example.com"]
    assert "3 checks refused by limits on PutRecords" in mail.outbox[0].body
    assert set(AlertEvent.objects.values_list("email_status", flat=True)) == {"sent"}


def test_disabled_rules_are_not_evaluated() -> None:
    rule = AlertRuleFactory(kind=RuleKind.DENIALS, threshold=0, enabled=False)
    UsageMinute.objects.create(customer="acct-1", operation="A", bucket=minute_ago(1), denied=3)

    assert alerts_evaluate(now=NOW).rules == 0
    assert history(rule) == []


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
