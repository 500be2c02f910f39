"""Report tests write export files into a folder of their own, and may run Celery tasks in-process."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from quota_platform.celery import app as celery_app


@pytest.fixture(autouse=True)
def export_dir(settings, tmp_path) -> Path:
    """VAR_DIR for this test: export files land in its exports/ folder."""
    settings.VAR_DIR = tmp_path
    return tmp_path / "exports"


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Tasks sent with .delay() run at once in this process (their on_commit dispatch included)."""
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates)
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = previous
