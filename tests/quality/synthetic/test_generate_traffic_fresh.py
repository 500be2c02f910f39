"""`manage.py generate_traffic --setup` against a fresh platform as `make run` serves it: it waits until the server
accepts the key it just issued (no user thread meets "This API key is not valid"), and it exits non-zero when the
platform never serves the key or its users stop on errors. Real run_platform and generate_traffic processes; the
server re-reads its configuration every 6 s (QUOTA_SNAPSHOT_POLL_S), so the new key stays unknown to it for 0 to 6 s
after the setup: without the wait, the users start well within that (in ~0.2 s) and stop on 401. (A server process
reads its first snapshot on its first call, so the test makes one, with the demo key, before the setup.)"""

import json
import subprocess
import sys
import time

import pytest

from tests.ops.test_run_platform_banner import banner_key
from tests.ops.test_run_platform_config import platform_env, served, served_limit
from tests.servers import free_port, repository_root

pytestmark = pytest.mark.slow

SLOW_SNAPSHOT = {"QUOTA_SNAPSHOT_POLL_S": "6"}
SMALL = ["--common", "2", "--aggressive", "1", "--prefix", "fresh"]


def generate_traffic(home, port: int, *args: str) -> list[str]:
    return [sys.executable, "manage.py", "generate_traffic", "--url", f"http://127.0.0.1:{port}", *SMALL, *args]


def test_setup_against_a_fresh_platform_waits_for_its_new_key_and_a_bad_key_exits_non_zero(tmp_path) -> None:
    port = free_port()
    with served(tmp_path, "platform", f"http://127.0.0.1:{port}/healthz", PORT=str(port), **SLOW_SNAPSHOT) as log:
        assert served_limit(port, banner_key(log.read_text())) == 10  # the server holds the demo's snapshot
        done = subprocess.run(  # noqa: S603 - our own interpreter and manage.py
            generate_traffic(tmp_path, port, "--setup", "--duration", "3", "--json"),
            cwd=repository_root(),
            env=platform_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        bad_key = subprocess.run(  # noqa: S603
            generate_traffic(tmp_path, port, "--api-key", "qp_00000000.nope", "--ready-timeout", "2"),
            cwd=repository_root(),
            env=platform_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout)
    assert record["errors"] == []
    aggressive = [row for row in record["customers"] if row["customer"] == "fresh-a00"]
    assert aggressive[0]["sessions"] > 0, "the aggressive user ran sessions"

    assert bad_key.returncode == 1
    assert "does not serve this key and the scenario's customers yet" in bad_key.stderr
    assert "HTTP 401: This API key is not valid" in bad_key.stderr


def test_users_stopped_by_errors_make_it_exit_non_zero(tmp_path) -> None:
    port = free_port()
    log_path = tmp_path / "traffic.log"
    with served(tmp_path, "platform", f"http://127.0.0.1:{port}/healthz", PORT=str(port)), log_path.open("w") as log:
        traffic = subprocess.Popen(  # noqa: S603 - our own interpreter and manage.py
            generate_traffic(tmp_path, port, "--setup", "--duration", "30"),
            cwd=repository_root(),
            env=platform_env(tmp_path),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 60
        while "traffic:" not in log_path.read_text():  # the progress bar: the users run
            assert traffic.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(1)
    # The platform stopped under the users.

    assert traffic.wait(timeout=90) == 1
    assert "user threads stopped on an error, so the record above is incomplete" in log_path.read_text()
