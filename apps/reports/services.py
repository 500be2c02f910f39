"""Usage reports: written at once when small, as a background ExportJob with progress when large."""

from __future__ import annotations

import datetime as dt
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.reports.exports import usage_export_write
from apps.reports.filters import UsageFilters
from apps.reports.models import ExportJob
from apps.reports.selectors import export_dir, usage_report_count, usage_report_rows
from apps.usage.models import UsageBucket

logger = logging.getLogger(__name__)

# Reports of up to this many rows are built while the browser waits (a few seconds of a web worker,
# measured at ~30k rows/s for CSV, ~13k for JSON, ~5k for XLSX on 2 busy cores); larger ones become a job.
IMMEDIATE_MAX_ROWS = {"csv": 50_000, "json": 50_000, "xlsx": 10_000}
# A job writes its progress (and proves it is alive) every this many rows.
PROGRESS_EVERY = 5_000
# A running job with no progress for this long lost its worker: a redelivered task may take it over.
STALE_AFTER = dt.timedelta(minutes=10)
# Rows fetched per round trip while writing (a server-side cursor on PostgreSQL).
FETCH_ROWS = 2_000

Progress = Callable[[int], None]


class ExportCancelled(Exception):
    """The job was deleted while it ran."""


def usage_report_write(
    *,
    rows: QuerySet[UsageBucket],
    filters: UsageFilters,
    fmt: str,
    target: BinaryIO,
    progress: Progress | None = None,
    every: int = PROGRESS_EVERY,
    now: dt.datetime | None = None,
) -> int:
    """Write `rows` to `target` in `fmt`; `progress(rows_written)` is called every `every` rows.
    Returns how many rows were written."""
    counter = _Counter(progress, every)
    info = filters.info(generated=now or timezone.now())
    usage_export_write(fmt, counter.counting(rows.iterator(chunk_size=FETCH_ROWS)), target, info)
    return counter.done


def usage_report_temporary_file(*, rows: QuerySet[UsageBucket], filters: UsageFilters, fmt: str) -> BinaryIO:
    """The report in an anonymous temporary file (gone when closed), rewound: for formats that cannot stream."""
    target = tempfile.TemporaryFile()  # noqa: SIM115 - the caller's response closes it
    try:
        usage_report_write(rows=rows, filters=filters, fmt=fmt, target=target)
    except BaseException:
        target.close()
        raise
    target.seek(0)
    return target


def usage_report_to_path(
    *, filters: UsageFilters, fmt: str, path: Path, progress: Progress | None = None, every: int = PROGRESS_EVERY
) -> int:
    """Write the report to `path` through a .part file renamed at the end: a failed run leaves no half file."""
    part = path.with_name(path.name + ".part")
    try:
        with part.open("wb") as target:
            written = usage_report_write(
                rows=usage_report_rows(filters=filters),
                filters=filters,
                fmt=fmt,
                target=target,
                progress=progress,
                every=every,
            )
        os.replace(part, path)
    finally:
        _remove(part)
    return written


@transaction.atomic
def export_request(*, requested_by: Any, filters: UsageFilters, fmt: str) -> ExportJob | None:
    """None when the report is small enough to build now (IMMEDIATE_MAX_ROWS); else its queued job."""
    rows, cap = usage_report_rows(filters=filters), IMMEDIATE_MAX_ROWS[fmt]
    if usage_report_count(rows=rows, cap=cap) <= cap:
        return None
    return export_job_create(requested_by=requested_by, filters=filters, fmt=fmt)


@transaction.atomic
def export_job_create(*, requested_by: Any, filters: UsageFilters, fmt: str) -> ExportJob:
    from apps.reports.tasks import export_job_run_task  # here: the task module imports this one

    job = ExportJob(
        requested_by=requested_by,
        granularity=filters.granularity,
        start=filters.start,
        end=filters.end,
        customers=list(filters.customers),
        operations=list(filters.operations),
        services=list(filters.services),
        api_keys=list(filters.api_keys),
        format=fmt,
    )
    job.full_clean()
    job.save()
    transaction.on_commit(partial(export_job_run_task.delay, job.pk))
    return job


def export_job_run(*, job_id: int, every: int = PROGRESS_EVERY, now: dt.datetime | None = None) -> ExportJob | None:
    """Build the job's file, recording progress every `every` rows. Returns the finished job, or None when
    there was nothing to run (another run has it, it is finished, or it was deleted). Any failure leaves
    the job failed with a sentence saying why; the partly written file is removed."""
    now = now or timezone.now()
    if not _claim(job_id, now):
        return None
    job = ExportJob.objects.get(pk=job_id)
    path = export_dir() / f"export-{job.pk}-{job.filters.filename(job.format)}"
    try:
        rows = usage_report_rows(filters=job.filters)
        _update(job_id, rows_total=usage_report_count(rows=rows))
        path.parent.mkdir(parents=True, exist_ok=True)
        done = usage_report_to_path(
            filters=job.filters,
            fmt=job.format,
            path=path,
            progress=lambda n: _update(job_id, rows_done=n),
            every=every,
        )
        _update(job_id, status=ExportJob.Status.DONE, rows_done=done, file_name=path.name, finished_at=timezone.now())
    except ExportCancelled:
        _remove(path)
        return None
    except Exception as error:  # every failure must end as a failed job a person can read
        logger.exception("Usage export #%s failed", job_id)
        _remove(path)
        ExportJob.objects.filter(pk=job_id).update(
            status=ExportJob.Status.FAILED, error=failure_message(error), finished_at=timezone.now()
        )
    return ExportJob.objects.filter(pk=job_id).first()


def export_job_delete(*, job: ExportJob) -> None:
    """Delete the job and its file. A job still running notices at its next progress update and stops."""
    if job.file_name:
        _remove(export_dir() / Path(job.file_name).name)
    job.delete()


def failure_message(error: BaseException) -> str:
    if isinstance(error, SoftTimeLimitExceeded):
        return (
            "The export took longer than a worker may run one task. Narrow the date range, pick fewer "
            "customers, or use a coarser granularity (hour or day) and export again."
        )
    if isinstance(error, OSError):
        return (
            f"The file could not be written in {export_dir()}: {error.strerror or error}. Free some disk space "
            "or fix the folder's permissions, then export again."
        )
    if isinstance(error, DatabaseError):
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"The usage could not be read from the database ({first_line}). Export again in a moment."
    return f"Something unexpected went wrong ({type(error).__name__}); it has been logged. Export again."


def _claim(job_id: int, now: dt.datetime) -> bool:
    """Take the job (a conditional UPDATE, so two deliveries of the task never both run it)."""
    claimable = Q(status=ExportJob.Status.QUEUED) | Q(status=ExportJob.Status.RUNNING, updated_at__lt=now - STALE_AFTER)
    taken = ExportJob.objects.filter(claimable, pk=job_id).update(
        status=ExportJob.Status.RUNNING, started_at=now, updated_at=timezone.now(), rows_done=0, rows_total=None
    )
    return taken == 1


def _update(job_id: int, **fields: Any) -> None:
    # updated_at is the heartbeat: UPDATE does not touch auto_now fields by itself.
    if not ExportJob.objects.filter(pk=job_id).update(updated_at=timezone.now(), **fields):
        raise ExportCancelled


def _remove(path: Path) -> None:
    """Remove a file if it is there; a failure to clean up must not hide the error that led here."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        logger.warning("Could not remove %s", path, exc_info=True)


class _Counter:
    def __init__(self, progress: Progress | None, every: int) -> None:
        self.progress = progress
        self.every = max(1, every)
        self.done = 0

    def counting(self, rows: Iterable[UsageBucket]) -> Iterator[UsageBucket]:
        for row in rows:
            yield row
            self.done += 1
            if self.progress is not None and self.done % self.every == 0:
                self.progress(self.done)
