"""The environment `manage.py run_platform` (make run) gets in the tests: the embedded default in a home of the test's
own (no .env, its own var/, a throwaway secret, plain http)."""

from __future__ import annotations

import os
import secrets
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
