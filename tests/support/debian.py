"""Debian packages that some tests drive (nginx, chromium): installed on first use when missing.

The README's `make test` must work on a fresh machine, so the suite installs what it needs rather than
asking the reader to; without root or apt it raises with the command to run instead of skipping.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess


class MissingPackage(RuntimeError):
    pass


@functools.cache
def ensure_binary(binary: str, *packages: str) -> str:
    """The path of `binary`, installing the Debian `packages` that provide it if it is missing."""
    found = shutil.which(binary) or _in_sbin(binary)
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise MissingPackage(f"{binary} is missing: run `sudo apt-get install -y {' '.join(packages)}`.")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
    if subprocess.run(command, env=env, capture_output=True, check=False).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, check=False)
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise MissingPackage(f"`{' '.join(command)}` failed:\n{done.stderr[-2000:]}")
    found = shutil.which(binary) or _in_sbin(binary)
    if not found:
        raise MissingPackage(f"{' '.join(packages)} installed, but {binary} is still not on PATH.")
    return found


def _in_sbin(binary: str) -> str | None:
    path = f"/usr/sbin/{binary}"
    return path if os.access(path, os.X_OK) else None
