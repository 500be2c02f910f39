"""Smoke test of `make run`'s server: embedded defaults, started as a real subprocess."""

import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from apps.ops.jobs import JOBS
from tests.servers import free_port, repository_root

STARTUP_TIMEOUT_S = 120


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


@pytest.fixture
def embedded_platform(tmp_path):
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "ENV_FILE": "",
        "VAR_DIR": str(tmp_path / "var"),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "SECURE_HTTPS": "false",
    }
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
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
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

    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 0
