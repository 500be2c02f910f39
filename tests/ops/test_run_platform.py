"""Smoke test of `make run`'s server: embedded defaults, started as a real subprocess; one worker per queue."""

import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from celery import Celery
from django.conf import settings

from apps.alerts.tasks import alert_event_deliver_task
from apps.ops.jobs import JOBS
from apps.ops.management.commands.run_platform import worker_commands
from tests.ops.platform_env import platform_env, platform_stop
from tests.servers import free_port, repository_root

STARTUP_TIMEOUT_S = 120
NO_SUCH_EVENT = 987654


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a loopback URL we built
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def wait_until_healthy(url: str, process: subprocess.Popen, log_path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"run_platform exited early with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            if get(url)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"{url} did not answer 200 within {STARTUP_TIMEOUT_S}s")


def wait_for_log(log_path, *patterns: str, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(re.search(pattern, log_path.read_text()) for pattern in patterns):
        assert time.monotonic() < deadline, f"no {patterns} in the output:\n{log_path.read_text()[-3000:]}"
        time.sleep(0.5)


def send_through_embedded_broker(var_dir, task_name: str, *args) -> None:
    """Send a task as the platform would, routed by its settings, through the embedded broker's folders (the
    folders settings.py gives the filesystem:// broker under VAR_DIR)."""
    probe = Celery("probe", broker="filesystem://", set_as_current=False)
    probe.conf.update(
        broker_transport_options={"data_folder_in": str(var_dir / "celery-broker"),
                                  "data_folder_out": str(var_dir / "celery-broker"),
                                  "control_folder": str(var_dir / "celery-control")},
        task_default_queue=settings.CELERY_TASK_DEFAULT_QUEUE,
        task_queues=settings.CELERY_TASK_QUEUES,
        task_routes=settings.CELERY_TASK_ROUTES,
    )  # fmt: skip
    probe.send_task(task_name, args=args)


def test_make_run_starts_the_accounting_worker_apart_from_the_others_and_beat_once() -> None:
    commands = worker_commands("python")

    consumed = [argument.removeprefix("--queues=") for command in commands for argument in command
                if argument.startswith("--queues=")]  # fmt: skip
    assert consumed == ["celery", "deliveries,reports"]
    assert sorted(settings.CELERY_TASK_QUEUES) == ["celery", "deliveries", "reports"]
    assert [command for command in commands if "-B" in command] == [
        ["python", "-m", "celery", "-A", "quota_platform", "worker", "-B", "--queues=celery", "--hostname=celery@%h",
         "--loglevel=INFO"],
    ]  # fmt: skip


@pytest.fixture
def embedded_platform(tmp_path):
    port = free_port()
    env = platform_env(tmp_path)
    log = open(tmp_path / "out.log", "wb")  # noqa: SIM115 - closed when the process is gone
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_platform", "--port", str(port)],
        cwd=repository_root(),
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}/healthz", process, tmp_path / "out.log")
        yield f"http://127.0.0.1:{port}", process, tmp_path
    finally:
        platform_stop(process)
        log.close()


@pytest.mark.slow
def test_the_embedded_platform_serves_health_admin_and_static_files_then_stops_on_ctrl_c(embedded_platform) -> None:
    base_url, process, tmp_path = embedded_platform

    assert get(f"{base_url}/healthz") == (200, b'{"status": "ok"}')
    status, body = get(f"{base_url}/admin/login/")
    assert status == 200
    assert b"Quota Platform" in body
    assert get(f"{base_url}/static/admin/css/base.css")[0] == 200
    assert "login: admin / " in (tmp_path / "out.log").read_text()
    assert (tmp_path / "var" / "db.sqlite3").exists()
    with sqlite3.connect(tmp_path / "var" / "db.sqlite3") as database:
        scheduled = {name for (name,) in database.execute("SELECT name FROM django_celery_beat_periodictask")}
    assert set(JOBS) <= scheduled  # the beat jobs run under make run too

    # A delivery sent as the alert job sends it reaches the deliveries queue, and a worker there runs it.
    wait_for_log(tmp_path / "out.log", r"celery@\S+ ready\.", r"background@\S+ ready\.")
    send_through_embedded_broker(tmp_path / "var", alert_event_deliver_task.name, NO_SUCH_EVENT)
    wait_for_log(tmp_path / "out.log", re.escape(f"'event': {NO_SUCH_EVENT}, 'attempts': 0, 'error': 'no attempt due'"))

    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 0
