"""The environment `manage.py run_platform` (make run) gets in the tests: the embedded default in a home of the test's
own (no .env, its own var/, a throwaway secret, plain http)."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
from pathlib import Path


def platform_env(home: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ENV_FILE": "",
        "VAR_DIR": str(home / "var"),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "SECURE_HTTPS": "false",
        **extra,
    }


def platform_stop(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, as a person stops `make run`; killed if it has not ended within a minute."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
