"""The production server configuration (gunicorn, quota_platform/gunicorn_conf.py) as a test subprocess,
pointed at this test's database and Redis key prefix."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.db import connection

from tests.servers import free_port, repository_root

STARTUP_TIMEOUT_S = 60


def test_database_url() -> str:
    db = connection.settings_dict
    user = db["USER"] or "postgres"
    return f"postgres://{user}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class LiveServer:
    def __init__(self, tmp_path: Path, *, redis_url: str, key_prefix: str, workers: int = 2, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / "gunicorn.log"
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "ENV_FILE": "",
            "DATABASE_URL": test_database_url(),
            "REDIS_URL": redis_url,
            "QUOTA_KEY_PREFIX": key_prefix,
            "SECRET_KEY": secrets.token_urlsafe(50),
            "SECURE_HTTPS": "false",
            "VAR_DIR": str(tmp_path / "var"),
            "WEB_CONCURRENCY": str(workers),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prometheus"),
            # As in-process tests (tests/conftest.py): on a loaded CI machine the production 50 ms would refuse
            # checks as timed out (they write nothing, answered as the store being away) and fail unrelated tests.
            "QUOTA_REDIS_TIMEOUT_MS": "1000",
            **env,
        }
        self.process: subprocess.Popen[bytes] | None = None
        if self.env["PROMETHEUS_MULTIPROC_DIR"]:
            Path(self.env["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)
        else:  # PROMETHEUS_MULTIPROC_DIR="": unset, as an operator who never heard of it leaves it
            del self.env["PROMETHEUS_MULTIPROC_DIR"]

    def __enter__(self) -> LiveServer:
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in __exit__
        command = [sys.executable, "-m", "gunicorn", "-c", "python:quota_platform.gunicorn_conf"]
        command += ["--bind", f"127.0.0.1:{self.port}", "quota_platform.wsgi"]
        self.process = subprocess.Popen(
            command, cwd=repository_root(), env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        self._wait_until_healthy()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}:\n{self.log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2):  # noqa: S310 - loopback
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"gunicorn did not become healthy:\n{self.log_path.read_text()}")


def post_status(url: str, key: str, body: dict[str, object], path: str = "/api/v1/check") -> int:
    """The HTTP status a live server answers a JSON POST of `body` to `path` with API key `key`."""
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{url}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
