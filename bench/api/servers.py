"""The project's own processes for bench/api: gunicorn under the production config, and manage.py commands."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
PYTHON = str(VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable))
STARTUP_TIMEOUT_S = 60
# The start of a log record: Django's "2026-01-01 12:00:00,000 LEVEL ..." or gunicorn's "[2026-01-01 ...".
LOG_RECORD = re.compile(r"^\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d")


def manage(env: dict[str, str], *arguments: str) -> str:
    result = subprocess.run([PYTHON, "manage.py", *arguments], cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(arguments)} failed ({result.returncode}):\n{result.stderr}")
    return result.stdout


SERVERS = ("gunicorn", "granian")


def server_command(app: str, port: int, kind: str | None = None) -> list[str]:
    """The command serving the WSGI module `app` on `port`: gunicorn under the production config, or, with kind
    (default: WEB_SERVER, else gunicorn) granian, granian WSGI with as many workers as gunicorn's config gives
    (WEB_CONCURRENCY, else one per core) and one blocking thread each (the same for every server)."""
    if (kind or os.environ.get("WEB_SERVER", "gunicorn")) != "granian":
        return [PYTHON, "-m", "gunicorn", "-c", "python:quota_platform.gunicorn_conf", app]
    workers = os.environ.get("WEB_CONCURRENCY", str(os.cpu_count() or 2))
    return [
        *(PYTHON, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port)),
        *("--workers", workers, "--blocking-threads", "1", "--no-ws", "--log-level", "warning"),
        f"{app}:application",
    ]


class Gunicorn:
    """gunicorn -c python:quota_platform.gunicorn_conf APP (or granian WSGI, `kind`), on a free loopback port, in
    its own session."""

    def __init__(self, name: str, app: str, env: dict[str, str], workdir: Path, kind: str | None = None) -> None:
        self.name = name
        self.kind = kind or os.environ.get("WEB_SERVER", "gunicorn")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**env, "BIND": f"127.0.0.1:{self.port}"}
        self.log_path = workdir / f"{self.kind}-{name}-{self.port}.log"
        self.command = server_command(app, self.port, self.kind)
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Gunicorn:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self._wait_until_healthy()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        # Workers left behind by a master that died: the session is ours alone.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def log_problems(self) -> str:
        """How many errors the server logged, with the first one whole (its traceback up to the next record)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        starts = [i for i, line in enumerate(lines) if " ERROR " in line or "[ERROR]" in line or "CRITICAL" in line]
        if not starts:
            return ""
        first = starts[0]
        end = next((i for i in range(first + 1, len(lines)) if LOG_RECORD.match(lines[i])), len(lines))
        block = lines[first:end]
        if len(block) > 80:  # the start and the end of a long traceback: what failed, and where
            block = [*block[:20], f"    ... {len(block) - 60} lines ...", *block[-40:]]
        return f"{len(starts)} error record(s); the first:\n" + "\n".join(block)

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                status = self.process.returncode
                raise RuntimeError(f"{self.kind} ({self.name}) exited with {status}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2):  # noqa: S310 - loopback only
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.kind} ({self.name}) did not become healthy:\n{self.log_tail()}")
