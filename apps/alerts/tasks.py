"""The delivery task: one attempt per run at an alert event's pending channels, retried with back-off.

It runs on its own queue, "deliveries" (CELERY_TASK_ROUTES in settings), so a slow receiver never holds the
workers that flush usage.
"""

from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from apps.alerts.services.delivery import alert_event_attempt_cut, alert_event_deliver, retry_delay_s

# One attempt takes at most QUOTA_ALERTS_WEBHOOK_TIMEOUT_S for the webhook (a deadline for the whole exchange) plus
# an SMTP exchange (EMAIL_TIMEOUT per operation). Below delivery.ATTEMPT_LEASE_S: an attempt under way for longer is
# taken for stopped.
SOFT_TIME_LIMIT_S = 30
TIME_LIMIT_S = 40


# max_retries=None: the event counts its own attempts in the database (a cut or lost one too) and gives up itself.
@shared_task(bind=True, max_retries=None, soft_time_limit=SOFT_TIME_LIMIT_S, time_limit=TIME_LIMIT_S)
def alert_event_deliver_task(self: Any, event_id: int) -> dict[str, Any]:
    try:
        outcome = alert_event_deliver(event_id=event_id)
    except SoftTimeLimitExceeded:
        reason = f"the attempt was cut at the {SOFT_TIME_LIMIT_S} s time limit"
        outcome = alert_event_attempt_cut(event_id=event_id, reason=reason)
    if outcome.pending:
        # Waits 10 s, 20 s, 40 s ... (delivery.retry_delay_s), the time the event says its next attempt is due.
        raise self.retry(countdown=retry_delay_s(outcome.attempts))
    return {"event": outcome.event_id, "attempts": outcome.attempts, "error": outcome.error}
