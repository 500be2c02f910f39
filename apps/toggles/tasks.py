"""The beat job that refreshes toggles, hot overrides and allow/deny rules from the external source."""

from typing import Any

from celery import shared_task
from django.db import DatabaseError

from apps.toggles.services import toggles_refresh

# The fetch has its own timeout (QUOTA_TOGGLES_TIMEOUT_S); these only stop a refresh stuck elsewhere
# (a DNS lookup that never returns, a lock held by a long transaction) from holding a worker.
SOFT_TIME_LIMIT_S = 60
TIME_LIMIT_S = 90


@shared_task(
    name="apps.toggles.tasks.toggles_refresh_task",
    # A source that fails is handled inside (last-known-good file). Only the database failing is worth a retry,
    # e.g. two refreshes racing to create the same toggle: the retry finds it created and changes nothing.
    autoretry_for=(DatabaseError,),
    retry_backoff=True,
    max_retries=3,
    soft_time_limit=SOFT_TIME_LIMIT_S,
    time_limit=TIME_LIMIT_S,
)
def toggles_refresh_task() -> dict[str, Any]:
    return toggles_refresh().as_dict()
