"""Quiet Celery logs: the worker's routine lines about the beat jobs go to DEBUG.

Every minute beat sends the flush (and the decision log drain), and the worker logs "received" and "succeeded" for
each: four INFO lines a minute on a platform where nothing happened. The jobs log at INFO themselves when they did
something (the flush: "usage flush: flushed 1 minutes, 12 rows ..."), so those routine lines are passed on at DEBUG
and show only with `--loglevel=DEBUG`. Failures, retries and every other task (usage exports) keep their level.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS

# The beat jobs' tasks (apps/ops/jobs.py JOBS; a test keeps the two in step): all of ops', and the toggles refresh.
BEAT_JOB_TASKS = ("apps.ops.tasks.", "apps.toggles.tasks.toggles_refresh_task")
SENDING_DUE = "Scheduler: Sending due task"
ROUTINE = {("celery.worker.strategy", LOG_RECEIVED), ("celery.app.trace", LOG_SUCCESS)}


class RoutineBeatJobsAtDebug(logging.Filter):
    """Demote beat's "Sending due task" and the worker's "received" / "succeeded" for beat-job tasks to DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not _routine(record):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)


def _routine(record: logging.LogRecord) -> bool:
    if record.name == "celery.beat":
        return isinstance(record.msg, str) and record.msg.startswith(SENDING_DUE)
    if (record.name, record.msg) not in ROUTINE or not isinstance(record.args, dict):
        return False
    return str(record.args.get("name", "")).startswith(BEAT_JOB_TASKS)


def quiet_routine_lines(logger: logging.Logger, **kwargs: Any) -> None:
    """For celery's after_setup_logger signal: filter every handler Celery gave the root logger."""
    for handler in logger.handlers:
        if not any(isinstance(existing, RoutineBeatJobsAtDebug) for existing in handler.filters):
            handler.addFilter(RoutineBeatJobsAtDebug())
