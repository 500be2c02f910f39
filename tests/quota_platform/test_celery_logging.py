"""Celery and the flush stay quiet at INFO when nothing happened: a real worker with an embedded beat flushing an
empty store every second logs no line per run, and shows them all at DEBUG; the filter itself on real records."""

import logging
import time

import pytest
from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS
from celery.app.trace import info as trace_info
from django.conf import settings
from kombu import Connection

from apps.ops.jobs import JOBS
from quota_platform.celery_logging import RoutineBeatJobsAtDebug
from tests.support.celery_worker import celery_worker
from tests.usage.test_celery_worker_and_beat import broker, flush_every_second  # noqa: F401 - fixtures

RUN_S = 8
ROUTINE_LINES = ("Sending due task flush_usage", "apps.ops.tasks.flush_usage_task[", "usage flush: nothing to flush")


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.addFilter(RoutineBeatJobsAtDebug())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept():
    handler, root = Kept(), logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


def test_routine_lines_about_beat_jobs_are_dropped_at_info_and_the_rest_kept(kept) -> None:
    job = {"name": "apps.ops.tasks.flush_usage_task", "id": "1", "runtime": 0.01, "return_value": "{}"}
    export = {**job, "name": "apps.reports.tasks.export_job_run_task"}
    trace_info(LOG_SUCCESS, job)
    logging.getLogger("celery.worker.strategy").info(LOG_RECEIVED, job)
    logging.getLogger("celery.beat").info("Scheduler: Sending due task %s (%s)", "flush_usage", job["name"])
    trace_info(LOG_SUCCESS, export)
    logging.getLogger("celery.beat").warning("Scheduler: Sending due task %s (%s)", "flush_usage", job["name"])

    assert [(record.levelname, record.getMessage()) for record in kept.records] == [
        ("INFO", "Task apps.reports.tasks.export_job_run_task[1] succeeded in 0.01s: {}"),
        ("WARNING", "Scheduler: Sending due task flush_usage (apps.ops.tasks.flush_usage_task)"),
    ]


def worker_log(tmp_path, loglevel: str, broker_url: str, redis_url: str, key_prefix: str) -> str:
    """What a worker with embedded beat logs at `loglevel` while flushing an empty store for RUN_S seconds."""
    worker = celery_worker(
        tmp_path, broker_url=broker_url, redis_url=redis_url, key_prefix=key_prefix, loglevel=loglevel
    )
    with worker as (process, log_path):
        time.sleep(RUN_S)
        assert process.poll() is None, log_path.read_text(errors="replace")
    return log_path.read_text(errors="replace")


@pytest.mark.slow
@pytest.mark.usefixtures("flush_every_second")
def test_an_idle_worker_says_nothing_per_run_at_info_and_everything_at_debug(
    request, tmp_path, redis_url, key_prefix
) -> None:
    broker_url = request.getfixturevalue("broker")  # from tests/usage, imported above
    info = worker_log(tmp_path, "INFO", broker_url, redis_url, key_prefix)
    debug = worker_log(tmp_path, "DEBUG", broker_url, redis_url, key_prefix)

    assert "ready." in info, info[-2000:]
    for line in ROUTINE_LINES:
        assert line not in info, f"{line!r} at INFO:\n{info[-2000:]}"
        assert line in debug, f"{line!r} missing at DEBUG: the test saw no flush run"


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_beat_jobs_routine_lines_are_dropped_at_info(kept, job) -> None:
    """refresh_toggles' task lives in apps/toggles: its received/succeeded lines were three INFO lines a minute."""
    run = {"name": JOBS[job].task, "id": "1", "runtime": 0.01, "return_value": "{}"}
    trace_info(LOG_SUCCESS, run)
    logging.getLogger("celery.worker.strategy").info(LOG_RECEIVED, run)

    assert kept.records == []


def test_the_embedded_broker_starts_without_kombus_no_hostname_warning(caplog) -> None:
    assert settings.EMBEDDED_BROKER, "the suite runs on the embedded folder broker"
    with caplog.at_level(logging.WARNING, logger="kombu.connection"):
        Connection(settings.CELERY_BROKER_URL).as_uri()

    assert caplog.records == []
