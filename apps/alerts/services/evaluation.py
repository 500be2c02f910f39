"""The alert job: every enabled rule checked against now, firings opened and resolved, notifications sent.

No alert storm: a rule and subject has at most one open firing (a partial unique constraint), so a condition
that holds for an hour notifies once; when it stops holding, the firing is closed by a conditional UPDATE and
one resolution is sent. Two runs at once cannot both notify: one wins the INSERT or the UPDATE.
Notifications leave through a Celery task after the commit (apps/alerts/tasks.py, on the deliveries queue), so a
slow receiver never holds up the job; each run also resumes the deliveries nobody is working on any more
(delivery.alert_deliveries_resume), so none stays pending for ever.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from apps.alerts.models import AlertEvent, AlertRule, Delivery, EventKind
from apps.alerts.services.conditions import ConditionUnreadable, Finding, StoreProbe, findings_of
from apps.alerts.services.delivery import alert_deliveries_resume

logger = logging.getLogger(__name__)


@dataclass
class EvaluationReport:
    rules: int = 0
    fired: int = 0
    resolved: int = 0
    firing: int = 0
    resumed: int = 0  # deliveries sent again (their attempt stopped, or their retry was lost)
    errors: list[str] = field(default_factory=list)

    @property
    def summary(self) -> str:
        text = (
            f"checked {self.rules} alert rules: {self.fired} fired, {self.resolved} resolved, {self.firing} firing now"
        )
        text += f"; {self.resumed} stalled deliveries resumed" if self.resumed else ""
        return text + (f"; {len(self.errors)} could not be read: {'; '.join(self.errors)}" if self.errors else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "rules": self.rules,
            "fired": self.fired,
            "resolved": self.resolved,
            "firing": self.firing,
            "resumed": self.resumed,
            "errors": list(self.errors),
        }


def _no_store_problems() -> list[str]:
    return []


def alerts_evaluate(*, now: dt.datetime | None = None, store_probe: StoreProbe | None = None) -> EvaluationReport:
    """Check every enabled rule. store_probe: what is wrong with Redis in words (apps/ops passes its readiness
    probe); a rule whose inputs cannot be read is skipped, its firings left as they are."""
    now = now or timezone.now()
    report = EvaluationReport(resumed=alert_deliveries_resume(now=now))
    for rule in AlertRule.objects.filter(enabled=True).select_related("customer", "limit", "operation"):
        report.rules += 1
        try:
            findings = findings_of(rule, now=now, store_probe=store_probe or _no_store_problems)
        except (ConditionUnreadable, DatabaseError) as error:
            logger.warning("Alert rule %s not evaluated: %s", rule.name, error)
            report.errors.append(f"{rule.name}: {error}")
            continue
        except Exception as error:
            # One broken rule must not silence the others; the traceback goes to the log.
            logger.exception("Alert rule %s failed", rule.name)
            report.errors.append(f"{rule.name}: unexpected {type(error).__name__}: {error}")
            continue
        fired, resolved, firing = rule_transition(rule, findings, now=now)
        report.fired, report.resolved, report.firing = (
            report.fired + fired,
            report.resolved + resolved,
            report.firing + firing,
        )
    logger.log(logging.INFO if report.fired or report.resolved else logging.DEBUG, "alerts: %s", report.summary)
    return report


@transaction.atomic
def rule_transition(rule: AlertRule, findings: dict[str, Finding], *, now: dt.datetime) -> tuple[int, int, int]:
    """Open a firing for each new subject in `findings`, resolve each open one no longer there:
    (fired, resolved, firing now)."""
    open_firings = {event.subject: event for event in AlertEvent.objects.filter(rule=rule, open=True)}
    fired = sum(
        _fire(rule, subject, finding, now) for subject, finding in findings.items() if subject not in open_firings
    )
    resolved = sum(_resolve(rule, event, now) for subject, event in open_firings.items() if subject not in findings)
    return fired, resolved, len(findings)


def _channels(rule: AlertRule, now: dt.datetime) -> dict[str, Any]:
    """Which channels the new event notifies, and when their first attempt is due (now)."""
    channels = {
        "email_status": Delivery.PENDING if rule.email_list else Delivery.NONE,
        "webhook_status": Delivery.PENDING if rule.webhook_url else Delivery.NONE,
    }
    return {**channels, "next_attempt_at": now if Delivery.PENDING in channels.values() else None}


def _fire(rule: AlertRule, subject: str, finding: Finding, now: dt.datetime) -> bool:
    try:
        with transaction.atomic():
            event = AlertEvent.objects.create(
                rule=rule,
                rule_name=rule.name,
                kind=EventKind.FIRED,
                subject=subject,
                at=now,
                value=finding.value,
                message=finding.message,
                open=True,
                **_channels(rule, now),
            )
    except IntegrityError:
        return False  # another run opened it a moment ago; it notifies
    _deliver_on_commit(event)
    return True


def _resolve(rule: AlertRule, firing: AlertEvent, now: dt.datetime) -> bool:
    if not AlertEvent.objects.filter(pk=firing.pk, open=True).update(open=False):
        return False  # another run resolved it
    message = f"Resolved: {firing.subject} is back under the threshold of rule {rule.name}."
    event = AlertEvent.objects.create(
        rule=rule,
        rule_name=rule.name,
        kind=EventKind.RESOLVED,
        subject=firing.subject,
        at=now,
        message=message,
        resolves=firing,
        **_channels(rule, now),
    )
    _deliver_on_commit(event)
    return True


def _deliver_on_commit(event: AlertEvent) -> None:
    if Delivery.PENDING not in (event.email_status, event.webhook_status):
        return
    from apps.alerts.tasks import alert_event_deliver_task

    # Robust: with the broker away the job still succeeds, and a later run resumes the delivery.
    transaction.on_commit(partial(alert_event_deliver_task.delay, event.pk), robust=True)
