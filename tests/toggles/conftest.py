"""What the toggles tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def toggles_settings(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """No outside source (each test sets its own), a last-known-good file of the test's own, loopback refused."""
    settings.QUOTA_TOGGLES_SOURCE = ""
    settings.QUOTA_TOGGLES_LKG_PATH = tmp_path / "var" / "toggles-lkg.json"
    settings.QUOTA_TOGGLES_ALLOW_PRIVATE = False
    settings.QUOTA_TOGGLES_TIMEOUT_S = 2
