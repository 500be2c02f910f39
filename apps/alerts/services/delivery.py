"""Delivering one alert event: an email (Django's mail settings) and a signed webhook, each at most once.

A channel that fails stays pending and the caller (apps/alerts/tasks.py) tries again after
`retry_delay_s(attempts)`: 10 s, 20 s, 40 s ... up to MAX_ATTEMPTS attempts, then the channel is marked failed
with the last error. A channel that went through is never sent again, whichever other channel failed.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from dataclasses import dataclass
from smtplib import SMTPException
from typing import Any

from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from apps.alerts.models import AlertEvent, Delivery, EventKind
from apps.alerts.services import webhooks

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
RETRY_BASE_S = 10
RETRY_MAX_S = 600
SUBJECT_PREFIX = "[Quota alert]"


class Undeliverable(Exception):
    """The channel cannot be delivered at all (its rule was deleted or lost its webhook): no retry."""


@dataclass(frozen=True, slots=True)
class DeliveryOutcome:
    event_id: int
    pending: bool  # a channel is still to be retried
    attempts: int
    error: str = ""


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
    """One attempt at every pending channel of the event. The row is locked meanwhile (a duplicate task skips
    it), and each channel is saved as soon as it is sent."""
    with transaction.atomic():
        event = (
            AlertEvent.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("rule", "resolves")
            .filter(pk=event_id)
            .first()
        )
        if event is None:
            return DeliveryOutcome(event_id, pending=False, attempts=0, error="locked or gone")
        return _attempt(event, now or timezone.now())


def _attempt(event: AlertEvent, now: dt.datetime) -> DeliveryOutcome:
    errors = []
    if event.email_status == Delivery.PENDING:
        errors += _channel(event, "email_status", _send_email)
    if event.webhook_status == Delivery.PENDING:
        errors += _channel(event, "webhook_status", _send_webhook)
    event.attempts += 1
    event.last_error = "; ".join(errors)
    pending = Delivery.PENDING in (event.email_status, event.webhook_status)
    if pending and event.attempts >= MAX_ATTEMPTS:
        event.email_status, event.webhook_status = (
            Delivery.FAILED if status == Delivery.PENDING else status
            for status in (event.email_status, event.webhook_status)
        )
        pending = False
        event.last_error = f"gave up after {event.attempts} attempts: {event.last_error}"
    if not pending:
        event.delivered_at = now
    event.save(update_fields=["email_status", "webhook_status", "attempts", "last_error", "delivered_at"])
    return DeliveryOutcome(event.pk, pending=pending, attempts=event.attempts, error=event.last_error)


def _channel(event: AlertEvent, field: str, send: Any) -> list[str]:
    try:
        send(event)
    except (webhooks.WebhookRefused, Undeliverable) as error:
        # Refused before connecting (a private address, a redirect), or nowhere to send: retrying cannot help.
        setattr(event, field, Delivery.FAILED)
        return [f"{field.split('_')[0]} refused: {error}"]
    except (webhooks.WebhookFailed, SMTPException, OSError) as error:
        logger.warning("Alert %s: %s failed (%s); will retry", event.pk, field.split("_")[0], error)
        return [f"{field.split('_')[0]}: {error}"]
    setattr(event, field, Delivery.SENT)
    return []


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
