"""The delivery task: one attempt per run at an alert event's pending channels, retried with back-off."""

from typing import Any

from celery import shared_task

from apps.alerts.services.delivery import MAX_ATTEMPTS, alert_event_deliver, retry_delay_s

# One attempt takes at most the webhook timeout (QUOTA_ALERTS_WEBHOOK_TIMEOUT_S) plus an SMTP exchange.
SOFT_TIME_LIMIT_S = 60
TIME_LIMIT_S = 90


@shared_task(bind=True, max_retries=MAX_ATTEMPTS, soft_time_limit=SOFT_TIME_LIMIT_S, time_limit=TIME_LIMIT_S)
def alert_event_deliver_task(self: Any, event_id: int) -> dict[str, Any]:
    outcome = alert_event_deliver(event_id=event_id)
    if outcome.pending:
        # Waits 10 s, 20 s, 40 s ... (delivery.retry_delay_s); the event counts its attempts and gives up itself.
        raise self.retry(countdown=retry_delay_s(outcome.attempts))
    return {"event": outcome.event_id, "attempts": outcome.attempts, "error": outcome.error}
