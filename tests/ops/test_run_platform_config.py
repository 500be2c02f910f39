"""`make run` as an operator meets it: a restart keeps the operator's edits to the demo data, BIND/PORT come from the
environment or .env, and a busy port stops it at once, naming the port and how to pick another. Real
`manage.py run_platform` processes on the embedded defaults (what `make run` starts)."""

import json
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.ops.platform_env import platform_env, platform_stop
from tests.ops.test_run_platform import wait_until_healthy
from tests.ops.test_run_platform_banner import banner_key
from tests.servers import free_port, repository_root

pytestmark = pytest.mark.slow

DEMO_LIMIT = "modify-shard-count-daily"
BUSY_EXIT_WITHIN_S = 20  # no migrate, no children: the check comes first


@contextmanager
def served(home: Path, run: str, url: str, **env: str) -> Iterator[Path]:
    """`manage.py run_platform --no-worker` with `env` (no --port), until `url` answers 200; stopped after."""
    log_path = home / f"{run}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and manage.py
            [sys.executable, "manage.py", "run_platform", "--no-worker"],
            cwd=repository_root(),
            env=platform_env(home, **env),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until_healthy(url, process, log_path)
            yield log_path
        finally:
            platform_stop(process)


def demo_limit_quantity(home: Path) -> int:
    with sqlite3.connect(home / "var" / "db.sqlite3") as database:
        (quantity,) = database.execute("SELECT quantity FROM limits_limit WHERE name = ?", (DEMO_LIMIT,)).fetchone()
    return quantity


def served_limit(port: int, key: str) -> int:
    request = urllib.request.Request(  # noqa: S310 - a loopback URL we built
        f"http://127.0.0.1:{port}/api/v1/customers/acct-1/limits", headers={"Authorization": f"Bearer {key}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        rows = json.load(response)["limits"]
    return next(row["limit"] for row in rows if row["name"] == DEMO_LIMIT)


def test_a_restart_keeps_the_operators_edit_of_a_demo_limit(tmp_path) -> None:
    port = free_port()
    health = f"http://127.0.0.1:{port}/healthz"
    with served(tmp_path, "first", health, PORT=str(port)) as log:
        assert "modify-shard-count-daily" in log.read_text(), "the first run loads the demo into the empty database"
    with sqlite3.connect(tmp_path / "var" / "db.sqlite3") as database:  # the operator raises the limit
        database.execute("UPDATE limits_limit SET quantity = 20 WHERE name = ?", (DEMO_LIMIT,))

    with served(tmp_path, "second", health, PORT=str(port)) as log:
        assert served_limit(port, banner_key(log.read_text())) == 20
        output = log.read_text()

    assert demo_limit_quantity(tmp_path) == 20
    assert "20 → 10" not in output
    assert "Demo data: not loaded: this database holds a configuration already" in output


def test_port_from_the_environment_and_bind_and_web_concurrency_from_the_env_file_are_honoured(tmp_path) -> None:
    port = free_port()
    with served(tmp_path, "port", f"http://127.0.0.1:{port}/healthz", PORT=str(port)) as log:
        assert f"Admin:  http://127.0.0.1:{port}/admin/" in log.read_text()

    bound = free_port()
    env_file = tmp_path / "platform.env"
    env_file.write_text(f"BIND=127.0.0.1:{bound}\nPORT={port}\nWEB_CONCURRENCY=3\n")
    with served(tmp_path, "bind", f"http://127.0.0.1:{bound}/healthz", ENV_FILE=str(env_file)) as log:
        output = log.read_text()
    assert f"Listening at: http://127.0.0.1:{bound}" in output, "BIND wins over PORT"
    assert f"health: http://127.0.0.1:{bound}/healthz" in output
    # The embedded default keeps its counters in one process, and says why it does not take the 3.
    assert "Web workers: 1, not WEB_CONCURRENCY=3 (that takes REDIS_URL)." in output


def test_a_busy_port_stops_it_at_once_naming_the_port_and_how_to_pick_another(tmp_path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        started = time.monotonic()
        finished = subprocess.run(  # noqa: S603 - our own interpreter and manage.py
            [sys.executable, "manage.py", "run_platform"],
            cwd=repository_root(),
            env=platform_env(tmp_path, PORT=str(port)),
            capture_output=True,
            text=True,
            timeout=120,
        )
        took_s = time.monotonic() - started

    output = finished.stdout + finished.stderr
    assert finished.returncode != 0, output
    assert took_s < BUSY_EXIT_WITHIN_S, output
    assert f"Port {port} (127.0.0.1:{port}) is already in use" in finished.stderr
    assert f"PORT={port + 1} make run" in finished.stderr
    assert "Quota Platform is running" not in output
    assert not (tmp_path / "var" / "db.sqlite3").exists(), "nothing was prepared or started"
