"""What the beat jobs last did, recorded by apps/ops/jobs.job_run around every run (scheduled or by hand)."""

from __future__ import annotations

import datetime as dt
import logging

from django.db import DatabaseError
from django.db.models import F
from django.utils import timezone

from apps.alerts.models import JobOutcome

logger = logging.getLogger(__name__)
ERROR_CHARS = 2000


def job_outcome_record(*, name: str, error: BaseException | str | None = None, now: dt.datetime | None = None) -> None:
    """Count a run of job `name`: a success resets its failures in a row, a failure (an exception, or the error a
    job reported while handling it itself) adds one.

    Best effort: when PostgreSQL is away the record is lost (logged), and the job's own outcome stands.
    """
    now = now or timezone.now()
    if error is None:
        changes = {"last_run_at": now, "last_success_at": now, "failures_in_a_row": 0}
    else:
        said = " ".join(str(error).split())
        text = (said if isinstance(error, str) else f"{type(error).__name__}: {said}")[:ERROR_CHARS]
        changes = {"last_run_at": now, "last_failure_at": now, "last_error": text}
    try:
        if error is not None and JobOutcome.objects.filter(name=name).update(
            failures_in_a_row=F("failures_in_a_row") + 1, **changes
        ):
            return
        JobOutcome.objects.update_or_create(
            name=name, defaults=changes, create_defaults={**changes, "failures_in_a_row": int(error is not None)}
        )
    except DatabaseError:
        logger.exception("Could not record the outcome of job %s", name)
