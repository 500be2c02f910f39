"""Alert tests run Celery tasks in-process when asked, and may send webhooks to a receiver on 127.0.0.1."""

from collections.abc import Iterator

import pytest

from quota_platform.celery import app as celery_app


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Tasks sent with .delay() run at once in this process, retries included (without their countdown).
    Not propagating: an eager retry would otherwise surface as a celery Retry exception instead of running."""
    previous = (celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates)
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = False
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = previous


@pytest.fixture
def loopback_webhooks(settings) -> None:
    """The test's receiver listens on 127.0.0.1 over plain HTTP, which production refuses."""
    settings.QUOTA_ALERTS_WEBHOOK_ALLOW_PRIVATE = True
