"""Delivering one alert event: an email (Django's mail settings) and a signed webhook, each at most once.

An attempt counts before anything is sent: a conditional UPDATE claims the event (attempts + 1, under way since
now) and commits, so an attempt cut short (the task's time limit, a worker killed) has counted all the same, and a
second task for the event cannot start another attempt meanwhile. Each channel is saved as soon as it is sent, so
a channel that went through is never sent again, whichever other channel failed. An attempt that ends leaves the
failed channels pending and due `retry_delay_s(attempts)` later (10 s, 20 s, 40 s ...), when the caller
(apps/alerts/tasks.py) tries again; after the last attempt (QUOTA_ALERTS_DELIVERY_ATTEMPTS) they are marked failed
with the last error.

Nothing stays pending for ever: `alert_deliveries_resume` (run by the alert job every minute) closes each attempt
that stopped without ending, and sends again each event whose next attempt is overdue (its retry was lost with a
worker, or the broker was away when it was first sent).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from dataclasses import dataclass
from functools import partial
from smtplib import SMTPException
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.alerts.models import AlertEvent, Delivery, EventKind
from apps.alerts.services import webhooks

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6  # the default of QUOTA_ALERTS_DELIVERY_ATTEMPTS
RETRY_BASE_S = 10
RETRY_MAX_S = 600
# Longer than an attempt can run (the task's hard time limit, apps/alerts/tasks.py): an attempt under way for longer
# has stopped without ending, and may be closed and followed by the next.
ATTEMPT_LEASE_S = 90
# A next attempt due this long ago that has not started is taken for lost (its task went with a worker) and resent.
OVERDUE_S = 60
RESUME_BATCH = 100
SUBJECT_PREFIX = "[Quota alert]"
PENDING = Q(email_status=Delivery.PENDING) | Q(webhook_status=Delivery.PENDING)


class Undeliverable(Exception):
    """The channel cannot be delivered at all (its rule was deleted or lost its webhook): no retry."""


@dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    event_id: int
    pending: bool  # a channel is still to be retried by the caller
    attempts: int
    error: str = ""


def max_attempts() -> int:
    return int(getattr(settings, "QUOTA_ALERTS_DELIVERY_ATTEMPTS", MAX_ATTEMPTS))


def retry_delay_s(attempts: int) -> int:
    """Seconds to wait after the `attempts`-th failed attempt: doubling from RETRY_BASE_S, capped."""
    return int(min(RETRY_BASE_S * 2 ** max(attempts - 1, 0), RETRY_MAX_S))


def event_payload(event: AlertEvent) -> dict[str, Any]:
    rule = event.rule
    return {
        "id": event.pk,
        "event": event.kind,
        "rule": {"id": event.rule_id, "name": event.rule_name, "kind": rule.kind if rule else None},
        "subject": event.subject,
        "value": event.value,
        "threshold": rule.threshold if rule else None,
        "message": event.message,
        "at": event.at.isoformat(),
        "fired_at": event.resolves.at.isoformat() if event.resolves else None,
    }


def event_body(event: AlertEvent) -> bytes:
    return json.dumps(event_payload(event), sort_keys=True, separators=(",", ":")).encode()


def alert_event_deliver(*, event_id: int, now: dt.datetime | None = None) -> DeliveryOutcome:
    """One attempt at every pending channel of the event, counted before anything is sent. With another attempt
    under way, or nothing left to send, nothing is done and nothing is to be retried."""
    attempts = _attempt_claim(event_id, now or timezone.now())
    if attempts is None:
        return DeliveryOutcome(event_id, pending=False, attempts=0, error="no attempt due")
    event = AlertEvent.objects.select_related("rule", "resolves").get(pk=event_id)
    errors = []
    if event.email_status == Delivery.PENDING:
        errors += _channel(event, "email_status", _send_email)
    if event.webhook_status == Delivery.PENDING:
        errors += _channel(event, "webhook_status", _send_webhook)
    return _attempt_end(event_id, attempts=attempts, error="; ".join(errors), now=now or timezone.now())


def alert_event_attempt_cut(*, event_id: int, reason: str, now: dt.datetime | None = None) -> DeliveryOutcome:
    """Close the event's attempt under way, cut short for `reason` (a time limit): it counted when it started, and
    ends like a failed one (due again later, or failed when it was the last)."""
    under_way = AlertEvent.objects.filter(pk=event_id, attempt_started_at__isnull=False).values("attempts").first()
    if under_way is None:
        return DeliveryOutcome(event_id, pending=False, attempts=0, error="no attempt under way")
    return _attempt_end(event_id, attempts=under_way["attempts"], error=reason, now=now or timezone.now())


def alert_deliveries_resume(*, now: dt.datetime | None = None) -> int:
    """Resume the deliveries nobody is working on any more; the number of events sent to the delivery task again.

    An attempt under way for longer than ATTEMPT_LEASE_S stopped without ending: it is closed like a failed one.
    An event whose next attempt is OVERDUE_S late (or that never had one) is sent again. Rows are claimed with
    SKIP LOCKED, so two runs at once resume each event once."""
    from apps.alerts.tasks import alert_event_deliver_task

    now = now or timezone.now()
    stalled = Q(attempt_started_at__lt=now - dt.timedelta(seconds=ATTEMPT_LEASE_S)) | Q(
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lt=now - dt.timedelta(seconds=OVERDUE_S)),
        attempt_started_at__isnull=True,
    )
    resumed = 0
    with transaction.atomic():
        events = AlertEvent.objects.filter(PENDING, stalled).select_for_update(skip_locked=True).order_by("pk")
        for event in events.only("pk", "attempts", "attempt_started_at", "last_error")[:RESUME_BATCH]:
            countdown = _resume(event, now)
            if countdown is not None:
                send = partial(alert_event_deliver_task.apply_async, (event.pk,), countdown=countdown)
                # Robust: with the broker away the event stays overdue, and the next run sends it.
                transaction.on_commit(send, robust=True)
                resumed += 1
    if resumed:
        logger.info("alerts: %d deliveries resumed", resumed)
    return resumed


def _resume(event: AlertEvent, now: dt.datetime) -> int | None:
    """Seconds after which the stalled `event` is to be attempted again; None when it is over (failed)."""
    if event.attempt_started_at is not None:
        error = f"attempt {event.attempts} did not finish (its worker stopped, or it ran past its time limit)"
        outcome = _attempt_end(event.pk, attempts=event.attempts, error=error, now=now)
        return retry_delay_s(event.attempts) if outcome.pending else None
    if event.attempts >= max_attempts():  # fewer attempts allowed than when it was last tried
        _attempt_end(event.pk, attempts=event.attempts, error=event.last_error, now=now)
        return None
    # Marked as resumed now: the next run waits OVERDUE_S before sending it again.
    AlertEvent.objects.filter(pk=event.pk).update(next_attempt_at=now)
    return 0


def _attempt_claim(event_id: int, now: dt.datetime) -> int | None:
    """Start the next attempt: counted and committed before anything is sent. Its number; None when another
    attempt is under way, nothing is pending or no attempt is left."""
    under_way_since = now - dt.timedelta(seconds=ATTEMPT_LEASE_S)
    with transaction.atomic(durable=True):
        claimed = (
            AlertEvent.objects.filter(PENDING, pk=event_id, attempts__lt=max_attempts())
            .filter(Q(attempt_started_at__isnull=True) | Q(attempt_started_at__lt=under_way_since))
            .update(attempts=F("attempts") + 1, attempt_started_at=now)
        )
        return AlertEvent.objects.values_list("attempts", flat=True).get(pk=event_id) if claimed else None


def _attempt_end(event_id: int, *, attempts: int, error: str, now: dt.datetime) -> DeliveryOutcome:
    """End attempt number `attempts`: the pending channels are due again after retry_delay_s(attempts), or failed
    when it was the last attempt."""
    statuses = AlertEvent.objects.filter(pk=event_id).values("email_status", "webhook_status").get()
    pending = Delivery.PENDING in statuses.values()
    changes: dict[str, Any] = {"attempt_started_at": None, "last_error": error, "next_attempt_at": None}
    if pending and attempts >= max_attempts():
        changes |= {field: Delivery.FAILED for field, status in statuses.items() if status == Delivery.PENDING}
        changes["last_error"] = f"gave up after {attempts} attempts: {error}"
        pending = False
    if pending:
        changes["next_attempt_at"] = now + dt.timedelta(seconds=retry_delay_s(attempts))
    else:
        changes["delivered_at"] = now
    # Only while the attempt is still the latest: an attempt taken for stopped and followed by another changes nothing.
    AlertEvent.objects.filter(pk=event_id, attempts=attempts).update(**changes)
    return DeliveryOutcome(event_id, pending=pending, attempts=attempts, error=changes["last_error"])


def _channel(event: AlertEvent, field: str, send: Any) -> list[str]:
    channel = field.split("_")[0]
    try:
        send(event)
    except (webhooks.WebhookRefused, Undeliverable) as error:
        # Refused before connecting (a private address, a redirect), or nowhere to send: retrying cannot help.
        _channel_save(event, field, Delivery.FAILED)
        return [f"{channel} refused: {error}"]
    except (webhooks.WebhookFailed, SMTPException, OSError) as error:
        logger.warning("Alert %s: %s failed (%s); will retry", event.pk, channel, error)
        return [f"{channel}: {error}"]
    _channel_save(event, field, Delivery.SENT)
    return []


def _channel_save(event: AlertEvent, field: str, status: str) -> None:
    """At once: a channel sent is never sent again, even if the attempt is cut before it ends."""
    setattr(event, field, status)
    AlertEvent.objects.filter(pk=event.pk).update(**{field: status})


def _send_email(event: AlertEvent) -> None:
    if event.rule is None:
        raise Undeliverable("the rule was deleted, so nobody is left to email")
    state = "FIRING" if event.kind == EventKind.FIRED else "resolved"
    subject = f"{SUBJECT_PREFIX} {state}: {event.rule_name}: {event.subject}"
    body = (
        f"{event.message}\n\nRule: {event.rule_name}\nSubject: {event.subject}\nAt: {event.at:%Y-%m-%d %H:%M:%S} UTC\n"
    )
    send_mail(subject, body, None, event.rule.email_list, fail_silently=False)


def _send_webhook(event: AlertEvent) -> None:
    if event.rule is None or not event.rule.webhook_url:
        raise Undeliverable("the rule was deleted or has no webhook any more")
    body = event_body(event)
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "X-Quota-Event": event.kind,
        "X-Quota-Delivery": str(event.pk),
        webhooks.TIMESTAMP_HEADER: str(timestamp),
        webhooks.SIGNATURE_HEADER: webhooks.signature(event.rule.webhook_secret, timestamp, body),
    }
    webhooks.webhook_post(
        event.rule.webhook_url,
        body,
        headers,
        timeout_s=webhooks.webhook_timeout_s(),
        allow_private=webhooks.allow_private(),
    )
