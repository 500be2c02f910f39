"""`make run`'s final banner: the demo API key next to the admin login, a key the API accepts, and the same key
printed by the next run on the same VAR_DIR. Real subprocesses on the embedded defaults."""

import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.ops.platform_env import platform_env
from tests.ops.test_run_platform import wait_until_healthy
from tests.servers import free_port, repository_root

pytestmark = pytest.mark.slow

BANNER_KEY = re.compile(r"^  Demo API key \(demo-service\): (qp_\S+)", re.MULTILINE)


def run_until_served(home: Path, run: str) -> tuple[str, str]:
    """Start `manage.py run_platform` (HTTP only) on `home`'s VAR_DIR, wait for it, stop it: (its base URL, its
    output). While it serves, the banner's key makes a check."""
    port = free_port()
    env = platform_env(home)
    log_path = home / f"{run}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and manage.py
            [sys.executable, "manage.py", "run_platform", "--port", str(port), "--no-worker"],
            cwd=repository_root(),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until_healthy(f"http://127.0.0.1:{port}/healthz", process, log_path)
            key = banner_key(log_path.read_text())
            assert check_status(port, key) == 200
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
    return key, log_path.read_text()


def banner_key(output: str) -> str:
    found = BANNER_KEY.search(output)
    assert found, f"no demo key in the banner:\n{output[-2000:]}"
    return found.group(1)


def check_status(port: int, key: str) -> int:
    request = urllib.request.Request(  # noqa: S310 - a loopback URL we built
        f"http://127.0.0.1:{port}/api/v1/check",
        data=json.dumps({"customer": "acct-1", "operation": "ModifyShardCount", "resource": "stream-1"}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return response.status


def test_the_banner_prints_a_working_demo_key_beside_the_login_and_the_next_run_prints_it_again(tmp_path) -> None:
    first_key, first = run_until_served(tmp_path, "first")
    second_key, second = run_until_served(tmp_path, "second")

    banner = first[first.index("Quota Platform is running.") :]
    assert "login: admin / " in banner
    assert first_key in banner, "the key is in the final banner, beside the login"
    assert second_key == first_key
    assert (tmp_path / "var" / "demo-api-key").read_text() == first_key + "\n"
    assert "it will not be shown again" not in second
