"""Every delivery attempt counts, however it ends, and no delivery stays pending for ever: an attempt is claimed and
counted before anything is sent, an attempt cut at the time limit or lost with its worker is closed and followed by
the next, the alert job resends what nobody is working on, and the deliveries have a queue of their own."""

import datetime as dt

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from apps.alerts import tasks
from apps.alerts.models import AlertEvent, Delivery, EventKind, RuleKind
from apps.alerts.services import webhooks
from apps.alerts.services.delivery import (
    ATTEMPT_LEASE_S,
    MAX_ATTEMPTS,
    OVERDUE_S,
    alert_deliveries_resume,
    alert_event_deliver,
)
from apps.alerts.services.evaluation import alerts_evaluate
from apps.alerts.tasks import alert_event_deliver_task
from apps.ops.jobs import JOBS
from quota_platform.celery import app as celery_app
from tests.alerts.factories import AlertRuleFactory, JobOutcomeFactory, WebhookReceiver
from tests.quota_platform.test_settings import run_manage

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 3, 2, 10, 30, 20, tzinfo=dt.UTC)
CUT_TEXT = f"the attempt was cut at the {tasks.SOFT_TIME_LIMIT_S} s time limit"


def pending_event(url: str, **fields) -> AlertEvent:
    rule = AlertRuleFactory(kind=RuleKind.DENIALS, webhook_url=url)
    return AlertEvent.objects.create(rule=rule, rule_name=rule.name, kind=EventKind.FIRED, subject="s", at=NOW,
                                     message="m", webhook_status=Delivery.PENDING, **fields)  # fmt: skip


def ago(seconds: float) -> dt.datetime:
    return NOW - dt.timedelta(seconds=seconds)


def test_an_attempt_is_counted_and_marked_under_way_before_the_webhook_is_sent(loopback_webhooks, monkeypatch) -> None:
    seen_while_sending = []
    post = webhooks.webhook_post

    def watched_post(*args, **kwargs):
        seen_while_sending.append(AlertEvent.objects.values_list("attempts", "attempt_started_at").get())
        return post(*args, **kwargs)

    monkeypatch.setattr(webhooks, "webhook_post", watched_post)
    with WebhookReceiver() as receiver:
        event = pending_event(receiver.url)
        alert_event_deliver(event_id=event.pk, now=NOW)

    assert seen_while_sending == [(1, NOW)]
    event.refresh_from_db()
    assert (event.webhook_status, event.attempts, event.attempt_started_at) == (Delivery.SENT, 1, None)


def test_a_failed_attempt_ends_with_its_next_attempt_due_after_the_back_off(loopback_webhooks) -> None:
    with WebhookReceiver(statuses=[503]) as receiver:
        event = pending_event(receiver.url)
        outcome = alert_event_deliver(event_id=event.pk, now=NOW)

    event.refresh_from_db()
    assert (outcome.pending, event.attempts, event.attempt_started_at) == (True, 1, None)
    assert event.next_attempt_at == NOW + dt.timedelta(seconds=10)
    assert "answered HTTP 503" in event.last_error


def test_an_attempt_cut_at_the_soft_time_limit_counts_and_the_delivery_ends_failed(
    loopback_webhooks, eager_tasks, monkeypatch
) -> None:
    def cut(*args, **kwargs):
        raise SoftTimeLimitExceeded  # what the worker raises in the task when the soft time limit passes

    monkeypatch.setattr(webhooks, "webhook_post", cut)
    event = pending_event("http://127.0.0.1:9/hook")

    alert_event_deliver_task.apply(args=[event.pk])

    event.refresh_from_db()
    assert (event.webhook_status, event.attempts, event.attempt_started_at) == (Delivery.FAILED, MAX_ATTEMPTS, None)
    assert event.last_error == f"gave up after {MAX_ATTEMPTS} attempts: {CUT_TEXT}"


def test_no_second_attempt_starts_while_one_is_under_way(loopback_webhooks) -> None:
    with WebhookReceiver() as receiver:
        event = pending_event(receiver.url, attempts=1, attempt_started_at=ago(ATTEMPT_LEASE_S - 5))
        outcome = alert_event_deliver(event_id=event.pk, now=NOW)

    assert (outcome.pending, receiver.received) == (False, [])
    event.refresh_from_db()
    assert (event.webhook_status, event.attempts) == (Delivery.PENDING, 1)


def test_an_attempt_lost_with_its_worker_is_closed_by_the_alert_job_and_followed_by_the_next(
    loopback_webhooks, eager_tasks, django_capture_on_commit_callbacks
) -> None:
    with WebhookReceiver() as receiver:
        event = pending_event(receiver.url, attempts=1, attempt_started_at=ago(ATTEMPT_LEASE_S + 1))
        with django_capture_on_commit_callbacks() as resends:
            assert alert_deliveries_resume(now=NOW) == 1

        event.refresh_from_db()
        assert (event.webhook_status, event.attempts, event.attempt_started_at) == (Delivery.PENDING, 1, None)
        assert event.next_attempt_at == NOW + dt.timedelta(seconds=10)
        assert event.last_error == "attempt 1 did not finish (its worker stopped, or it ran past its time limit)"
        for resend in resends:
            resend()

    event.refresh_from_db()
    assert (event.webhook_status, event.attempts, len(receiver.received)) == (Delivery.SENT, 2, 1)


def test_a_last_attempt_lost_with_its_worker_marks_the_delivery_failed(django_capture_on_commit_callbacks) -> None:
    event = pending_event("https://hooks.example.com/q", attempts=MAX_ATTEMPTS, attempt_started_at=ago(3600))

    with django_capture_on_commit_callbacks() as resends:
        assert alert_deliveries_resume(now=NOW) == 0

    event.refresh_from_db()
    assert (event.webhook_status, event.attempt_started_at, event.delivered_at, resends) == (
        Delivery.FAILED, None, NOW, [],
    )  # fmt: skip
    assert event.last_error.startswith(f"gave up after {MAX_ATTEMPTS} attempts: attempt {MAX_ATTEMPTS} did not finish")


def test_deliveries_nobody_works_on_are_resent_once_and_the_others_left_alone(
    django_capture_on_commit_callbacks,
) -> None:
    url = "https://hooks.example.com/q"
    never_sent = pending_event(url, next_attempt_at=ago(OVERDUE_S + 1))  # the broker was away
    from_before_the_fix = pending_event(url)  # pending with 0 attempts and no due time
    retry_lost = pending_event(url, attempts=2, next_attempt_at=ago(OVERDUE_S + 1))
    pending_event(url, next_attempt_at=ago(OVERDUE_S - 5))  # its task is probably about to run
    pending_event(url, attempts=1, attempt_started_at=ago(ATTEMPT_LEASE_S - 5))  # under way
    pending_event(url, attempts=1, next_attempt_at=NOW + dt.timedelta(seconds=30))  # waiting for its retry
    AlertEvent.objects.create(rule_name="r", kind=EventKind.FIRED, subject="sent", at=NOW, message="m",
                              webhook_status=Delivery.SENT, next_attempt_at=ago(3600))  # fmt: skip

    with django_capture_on_commit_callbacks() as resends:
        assert alert_deliveries_resume(now=NOW) == 3
    with django_capture_on_commit_callbacks() as again:
        assert alert_deliveries_resume(now=NOW + dt.timedelta(seconds=1)) == 0

    assert [resend.args for resend in resends] == [((event.pk,),) for event in (never_sent, from_before_the_fix,
                                                                                 retry_lost)]  # fmt: skip
    assert again == []


def test_fewer_attempts_allowed_than_an_event_already_had_ends_it_failed(settings) -> None:
    settings.QUOTA_ALERTS_DELIVERY_ATTEMPTS = 2
    event = pending_event("https://hooks.example.com/q", attempts=3, last_error="webhook: timed out")

    assert alert_deliveries_resume(now=NOW) == 0

    event.refresh_from_db()
    assert (event.webhook_status, event.last_error) == (Delivery.FAILED, "gave up after 3 attempts: webhook: timed out")


def test_the_alert_job_resumes_stalled_deliveries_and_says_so(django_capture_on_commit_callbacks) -> None:
    pending_event("https://hooks.example.com/q", next_attempt_at=ago(3600))

    with django_capture_on_commit_callbacks():
        report = alerts_evaluate(now=NOW)

    assert report.resumed == 1
    assert report.summary.endswith("; 1 stalled deliveries resumed")


def test_a_new_event_is_due_at_once_and_its_delivery_sent_on_commit(django_capture_on_commit_callbacks) -> None:
    AlertRuleFactory(kind=RuleKind.JOB, threshold=1, webhook_url="https://hooks.example.com/q")
    JobOutcomeFactory(name="flush_usage", failures_in_a_row=1)
    with django_capture_on_commit_callbacks() as sends:
        alerts_evaluate(now=NOW)

    event = AlertEvent.objects.get()
    assert (event.webhook_status, event.next_attempt_at, event.attempts, len(sends)) == (
        Delivery.PENDING, NOW, 0, 1,
    )  # fmt: skip


def test_deliveries_and_exports_have_queues_of_their_own_and_every_beat_job_stays_on_the_default_one() -> None:
    def queue_of(task_name: str) -> str:
        return celery_app.amqp.router.route({}, task_name)["queue"].name

    assert queue_of(alert_event_deliver_task.name) == "deliveries"
    assert {queue_of(job.task) for job in JOBS.values()} == {"celery"}
    assert queue_of("apps.reports.tasks.export_job_run_task") == "reports"
    assert set(celery_app.amqp.queues) == {"celery", "deliveries", "reports"}  # a worker without -Q consumes all


def test_an_attempt_ends_within_its_time_limits_long_before_it_could_be_taken_for_stopped() -> None:
    assert webhooks.DEFAULT_TIMEOUT_S < tasks.SOFT_TIME_LIMIT_S < tasks.TIME_LIMIT_S < ATTEMPT_LEASE_S


@pytest.mark.parametrize(
    ("variable", "value"), [("QUOTA_ALERTS_DELIVERY_ATTEMPTS", "0"), ("QUOTA_ALERTS_WEBHOOK_TIMEOUT_S", "0")]
)
def test_no_attempt_at_all_or_no_time_for_one_is_refused_in_words_at_start(variable, value) -> None:
    result = run_manage("check", env={"DEBUG": "true", variable: value})

    assert result.returncode != 0
    assert "QUOTA_ALERTS_WEBHOOK_TIMEOUT_S must be above 0 and QUOTA_ALERTS_DELIVERY_ATTEMPTS at least 1" in (
        result.stderr
    )
