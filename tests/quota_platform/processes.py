"""A command run in the repository in a fresh process, with only the environment a test gives it (and PATH, HOME)."""

import os
import subprocess

from tests.servers import repository_root


def run_in_repository(command: list[str], *, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        command, cwd=repository_root(), env={**base, **env}, capture_output=True, text=True, timeout=60, check=False
    )
