"""Export jobs: created and dispatched on commit, run with progress to a finished file, failing in words,
claimed once, taken over when stale, stopped when deleted; small reports are built at once."""

import datetime as dt
import os

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import OperationalError
from django.utils import timezone

from apps.reports import services
from apps.reports.models import ExportJob
from apps.reports.selectors import export_job_file, export_job_status
from apps.reports.services import export_job_create, export_job_delete, export_job_run, export_request
from apps.reports.tasks import export_job_run_task
from tests.reports.factories import ExportJobFactory, UserFactory
from tests.reports.usage_set import PARSERS, all_days, db_rows, usage_generate

pytestmark = pytest.mark.django_db


def job_for(filters, fmt="csv", **fields):
    return ExportJobFactory(
        granularity=filters.granularity,
        start=filters.start,
        end=filters.end,
        customers=list(filters.customers),
        operations=list(filters.operations),
        format=fmt,
        **fields,
    )


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_a_job_writes_its_file_under_var_exports_with_progress_and_ends_done(export_dir, monkeypatch, fmt) -> None:
    count = usage_generate("hour")
    job = job_for(all_days(), fmt)
    snapshots = []
    real_update = services._update
    monkeypatch.setattr(
        services,
        "_update",
        lambda job_id, **fields: (real_update(job_id, **fields), snapshots.append(ExportJob.objects.get(pk=job_id)))[0],
    )

    finished = export_job_run(job_id=job.pk, every=25)

    assert finished.status == ExportJob.Status.DONE
    assert (finished.rows_done, finished.rows_total, finished.percent) == (count, count, 100)
    assert finished.started_at is not None
    assert finished.finished_at is not None
    path = export_job_file(finished)
    assert path.parent == export_dir
    assert path.name.startswith(f"export-{job.pk}-usage-hour-20260301T000000Z-20260305T000000Z")
    assert PARSERS[fmt](path.read_bytes()) == db_rows(all_days())
    assert [s.rows_done for s in snapshots if s.status == "running"] == [0, 25, 50, 75]
    assert {s.rows_total for s in snapshots} == {count}
    assert [s.percent for s in snapshots if s.status == "running"] == [0, 26, 52, 78]
    assert export_job_status(finished).message == f"Done: {count} rows."


def test_creating_a_job_dispatches_its_task_only_on_commit(django_capture_on_commit_callbacks, eager_tasks) -> None:
    usage_generate("hour", per_series=1)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = export_job_create(requested_by=UserFactory(), filters=all_days(), fmt="json")
    assert ExportJob.objects.get(pk=job.pk).status == ExportJob.Status.QUEUED
    assert len(callbacks) == 1

    callbacks[0]()

    job.refresh_from_db()
    assert (job.status, job.rows_done) == (ExportJob.Status.DONE, 8)


def test_a_small_report_is_built_at_once_and_a_large_one_becomes_a_job(monkeypatch) -> None:
    count = usage_generate("hour", per_series=2)
    monkeypatch.setattr(services, "IMMEDIATE_MAX_ROWS", {"csv": count, "xlsx": count - 1})
    assert export_request(requested_by=None, filters=all_days(), fmt="csv") is None

    job = export_request(requested_by=None, filters=all_days(), fmt="xlsx")

    assert (job.status, job.format, job.start, job.end) == ("queued", "xlsx", all_days().start, all_days().end)


def test_a_job_is_run_once_even_if_its_task_is_delivered_twice() -> None:
    job = job_for(all_days())

    assert export_job_run(job_id=job.pk) is not None
    assert export_job_run(job_id=job.pk) is None
    assert export_job_run_task.apply(args=[job.pk]).get() == f"export #{job.pk}: nothing to run"


def test_a_running_job_that_stopped_moving_is_taken_over_but_a_live_one_is_not() -> None:
    job = job_for(all_days(), status=ExportJob.Status.RUNNING)
    now = timezone.now()

    assert export_job_run(job_id=job.pk, now=now) is None
    assert export_job_run(job_id=job.pk, now=now + services.STALE_AFTER + dt.timedelta(seconds=1)).status == "done"


def test_the_task_runs_the_job_and_says_how_it_ended() -> None:
    job = job_for(all_days())

    assert export_job_run_task.apply(args=[job.pk]).get() == f"export #{job.pk}: done"


def test_an_unwritable_folder_fails_the_job_with_a_sentence_and_no_file(export_dir) -> None:
    usage_generate("hour", per_series=1)
    export_dir.parent.mkdir(parents=True, exist_ok=True)
    export_dir.write_text("a file where the folder should be")
    job = job_for(all_days())

    finished = export_job_run(job_id=job.pk)

    assert finished.status == ExportJob.Status.FAILED
    assert finished.error.startswith(f"The file could not be written in {export_dir}:")
    assert finished.error.endswith("then export again.")
    assert export_job_status(finished).message == f"Failed: {finished.error}"
    assert export_job_file(finished) is None


@pytest.mark.parametrize(
    ("error", "sentence"),
    [
        (OperationalError("server closed the connection"), "could not be read from the database"),
        (SoftTimeLimitExceeded(), "took longer than a worker may run one task"),
        (ZeroDivisionError("bug"), "Something unexpected went wrong (ZeroDivisionError)"),
    ],
)
def test_any_failure_while_writing_leaves_the_job_failed_in_words_and_no_part_file(
    export_dir, monkeypatch, error, sentence
) -> None:
    usage_generate("hour", per_series=1)
    job = job_for(all_days())

    def failing(*args, **kwargs):
        raise error

    monkeypatch.setattr(services, "usage_export_write", failing)

    finished = export_job_run(job_id=job.pk)

    assert finished.status == ExportJob.Status.FAILED
    assert sentence in finished.error
    assert os.listdir(export_dir) == []


def test_deleting_a_running_job_stops_it_and_removes_its_file(export_dir, monkeypatch) -> None:
    usage_generate("hour")
    job = job_for(all_days())
    real_update = services._update

    def delete_midway(job_id, **fields):
        if fields.get("rows_done") == 10:
            ExportJob.objects.filter(pk=job_id).delete()
        real_update(job_id, **fields)

    monkeypatch.setattr(services, "_update", delete_midway)

    assert export_job_run(job_id=job.pk, every=10) is None
    assert not ExportJob.objects.exists()
    assert os.listdir(export_dir) == []


def test_deleting_a_finished_job_removes_its_file() -> None:
    usage_generate("hour", per_series=1)
    job = export_job_run(job_id=job_for(all_days()).pk)
    path = export_job_file(job)
    assert path.is_file()

    export_job_delete(job=job)

    assert not path.exists()
    assert not ExportJob.objects.exists()


def test_the_status_says_when_a_job_waits_for_a_worker_too_long() -> None:
    job = job_for(all_days())

    assert export_job_status(job).message == "Waiting for a worker to start it."
    later = export_job_status(job, now=job.updated_at + dt.timedelta(minutes=5)).message
    assert later == "Waiting for a worker to start it. It has waited 5 minutes: is the Celery worker running?"


def test_a_done_job_whose_file_was_removed_says_so(export_dir) -> None:
    job = export_job_run(job_id=job_for(all_days()).pk)
    export_job_file(job).unlink()

    status = export_job_status(job)

    assert status.has_file is False
    assert status.message == f"Done (0 rows), but the file is gone from {export_dir}: export again."
