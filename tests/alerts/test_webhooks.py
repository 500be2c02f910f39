"""Signed webhooks to a real receiver on 127.0.0.1: one notification per firing, one per resolution, retried
with back-off on errors, never sent to a private address unless the operator allows it, and never held past the
timeout by a receiver that stalls or trickles."""

import datetime as dt
import hashlib
import hmac
import time

import pytest

from apps.alerts.models import AlertEvent, Delivery, EventKind, RuleKind
from apps.alerts.services.delivery import MAX_ATTEMPTS, alert_event_deliver, retry_delay_s
from apps.alerts.services.evaluation import alerts_evaluate
from apps.alerts.services.webhooks import WebhookFailed, WebhookRefused, webhook_post, webhook_url_refusal
from apps.alerts.tasks import alert_event_deliver_task
from apps.usage.models import UsageMinute
from tests.alerts.factories import AlertRuleFactory, WebhookReceiver
from tests.alerts.test_rules import check
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.support.stalling_receiver import StallingReceiver

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 3, 2, 10, 30, 20, tzinfo=dt.UTC)


def expected_signature(secret: str, headers: dict[str, str], body: bytes) -> str:
    signed = headers["X-Quota-Timestamp"].encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def evaluate(capture, now=NOW) -> None:
    with capture(execute=True):
        alerts_evaluate(now=now)


def test_a_crossed_threshold_is_posted_once_signed_then_its_resolution_once(
    api, clock, eager_tasks, loopback_webhooks, django_capture_on_commit_callbacks
) -> None:
    customer = CustomerFactory(external_id="acct-1")
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=10, period_seconds=60)
    with WebhookReceiver() as receiver:
        rule = AlertRuleFactory(kind=RuleKind.USAGE, threshold=80, customer=customer, webhook_url=receiver.url)
        check(api, "acct-1", "ListStreams", 8)
        for _ in range(3):
            evaluate(django_capture_on_commit_callbacks)
        assert len(receiver.received) == 1

        clock.advance(60_000)
        for _ in range(3):
            evaluate(django_capture_on_commit_callbacks)

    assert [payload["event"] for payload in receiver.payloads()] == ["fired", "resolved"]
    fired, resolved = receiver.payloads()
    assert (fired["subject"], fired["value"], fired["threshold"], fired["rule"]["name"]) == (
        "acct-1 / streams", 80.0, 80, rule.name,
    )  # fmt: skip
    assert resolved["fired_at"] == fired["at"]
    for request in receiver.received:
        headers = request["headers"]
        assert headers["X-Quota-Signature"] == expected_signature(rule.webhook_secret, headers, request["body"])
        assert abs(int(headers["X-Quota-Timestamp"]) - time.time()) < 60
        assert headers["Content-Type"] == "application/json"
    assert receiver.received[0]["path"] == "/hooks/quota"
    assert set(AlertEvent.objects.values_list("webhook_status", flat=True)) == {Delivery.SENT}


def test_a_receiver_answering_500_gets_the_same_signed_body_again_and_then_accepts_it(
    eager_tasks, loopback_webhooks, django_capture_on_commit_callbacks
) -> None:
    UsageMinute.objects.create(customer="acct-1", operation="A", bucket=NOW.replace(second=0) - dt.timedelta(minutes=1),
                               denied=50)  # fmt: skip
    with WebhookReceiver(statuses=[500]) as receiver:
        rule = AlertRuleFactory(kind=RuleKind.DENIALS, threshold=10, webhook_url=receiver.url)
        evaluate(django_capture_on_commit_callbacks)

    first, second = receiver.received
    assert first["body"] == second["body"]
    assert second["headers"]["X-Quota-Signature"] == expected_signature(
        rule.webhook_secret, second["headers"], second["body"]
    )
    event = AlertEvent.objects.get()
    assert (event.webhook_status, event.attempts, event.delivered_at is not None) == (Delivery.SENT, 2, True)


def test_each_failed_attempt_waits_twice_as_long_as_the_one_before_up_to_a_cap() -> None:
    assert [retry_delay_s(attempt) for attempt in range(1, 9)] == [10, 20, 40, 80, 160, 320, 600, 600]


def test_an_attempt_that_fails_leaves_the_webhook_pending_and_says_when_the_next_is_due(loopback_webhooks) -> None:
    with WebhookReceiver(statuses=[503]) as receiver:
        rule = AlertRuleFactory(kind=RuleKind.DENIALS, webhook_url=receiver.url)
        event = AlertEvent.objects.create(rule=rule, rule_name=rule.name, kind=EventKind.FIRED, subject="s", at=NOW,
                                          message="m", webhook_status=Delivery.PENDING)  # fmt: skip

        outcome = alert_event_deliver(event_id=event.pk)

    assert (outcome.pending, outcome.attempts) == (True, 1)
    assert "answered HTTP 503" in outcome.error
    event.refresh_from_db()
    assert event.webhook_status == Delivery.PENDING


def test_a_receiver_that_keeps_failing_is_given_up_after_the_last_attempt(loopback_webhooks, eager_tasks) -> None:
    with WebhookReceiver(statuses=[500] * 20) as receiver:
        rule = AlertRuleFactory(kind=RuleKind.DENIALS, webhook_url=receiver.url)
        event = AlertEvent.objects.create(rule=rule, rule_name=rule.name, kind=EventKind.FIRED, subject="s", at=NOW,
                                          message="m", webhook_status=Delivery.PENDING)  # fmt: skip
        alert_event_deliver_task.apply(args=[event.pk])

    assert len(receiver.received) == MAX_ATTEMPTS
    event.refresh_from_db()
    assert event.webhook_status == Delivery.FAILED
    assert event.last_error.startswith(f"gave up after {MAX_ATTEMPTS} attempts: webhook: ")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://example.com/hook", "plain http:// is refused"),
        ("ftp://example.com/hook", "only https:// URLs"),
        ("https://127.0.0.1/hook", "127.0.0.1 is not a public address: loopback"),
        ("https://10.1.2.3/hook", "10.1.2.3 is not a public address: private"),
        ("https://[::ffff:192.168.0.1]/hook", "not a public address: private (192.168.0.1 inside"),
    ],
)
def test_urls_that_could_reach_inside_are_refused_when_a_rule_is_saved(url, says) -> None:
    assert says in webhook_url_refusal(url, allow_private=False)


def test_a_host_name_resolving_to_a_private_address_is_refused_before_connecting() -> None:
    with WebhookReceiver() as receiver:
        url = receiver.url.replace("http://127.0.0.1", "https://localhost")
        with pytest.raises(WebhookRefused, match="resolves to .*, not a public address: loopback"):
            webhook_post(url, b"{}", {}, timeout_s=1, allow_private=False)

    assert receiver.received == []


def test_a_refused_webhook_is_marked_failed_at_once_and_not_retried(eager_tasks, settings) -> None:
    settings.QUOTA_ALERTS_WEBHOOK_ALLOW_PRIVATE = False
    with WebhookReceiver() as receiver:
        rule = AlertRuleFactory(kind=RuleKind.DENIALS, webhook_url=receiver.url.replace("http://", "https://"))
        event = AlertEvent.objects.create(rule=rule, rule_name=rule.name, kind=EventKind.FIRED, subject="s", at=NOW,
                                          message="m", webhook_status=Delivery.PENDING)  # fmt: skip
        alert_event_deliver_task.apply(args=[event.pk])

    event.refresh_from_db()
    assert (event.webhook_status, event.attempts, receiver.received) == (Delivery.FAILED, 1, [])
    assert "loopback" in event.last_error


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scheme", "stall"),
    [("http", {}), ("http", {"trickle_every_s": 0.2}), ("http", {"trickle_every_s": 0.2, "body": True}),
     ("https", {})],
    ids=["never answers", "trickles its headers", "trickles its body", "never completes the TLS handshake"],
)  # fmt: skip
def test_a_receiver_that_stalls_or_trickles_holds_an_attempt_no_longer_than_the_timeout(scheme, stall) -> None:
    with StallingReceiver(hold_s=8, **stall) as receiver:
        started = time.monotonic()
        with pytest.raises(WebhookFailed, match=r"127\.0\.0\.1:\d+/hooks/quota did not answer within 1 s"):
            webhook_post(receiver.url.replace("http", scheme, 1), b"{}", {}, timeout_s=1, allow_private=True)
        elapsed = time.monotonic() - started

    assert receiver.connections == 1
    assert elapsed < 1.5
