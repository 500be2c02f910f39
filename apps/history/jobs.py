"""Name the Celery job as the actor of the changes it makes ("refresh_toggles_task (job)")."""

from typing import Any

from celery.signals import task_postrun, task_prerun

from apps.history.context import job_end, job_start

_tokens: dict[str, object] = {}


def _job_started(task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    if task_id is not None and task is not None:
        _tokens[task_id] = job_start(str(task.name).rsplit(".", 1)[-1])


def _job_finished(task_id: str | None = None, **kwargs: Any) -> None:
    token = _tokens.pop(task_id or "", None)
    if token is not None:
        job_end(token)


def connect() -> None:
    task_prerun.connect(_job_started, weak=False, dispatch_uid="history-job-started")
    task_postrun.connect(_job_finished, weak=False, dispatch_uid="history-job-finished")
