"""Browser fixtures: one production server (gunicorn, static files collected) for the whole session, one
headless Chromium per test module, a fresh page per test, and an operator to log in as. Tests using them need
`@pytest.mark.django_db(transaction=True)`: the server is another process and sees only committed rows."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from django.contrib.auth.models import User
from playwright.sync_api import Browser, Page

from tests.support.browser import chromium, new_page, staff_user_create, static_files_collect
from tests.support.live_server import LiveServer

OPERATOR_PASSWORD = "operator-password-for-tests"  # noqa: S105 - a throwaway test account


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Not session-wide: while Playwright's sync API runs, its event loop is the running loop of this thread,
    # and every later test in the same process that calls asyncio.run() would fail.
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="session")
def browser_key_prefix(redis_url: str) -> Iterator[str]:
    """The server's Redis key prefix, shared by the browser tests; its keys are deleted at the end."""
    prefix = f"test-browser-{uuid.uuid4().hex[:12]}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture(scope="session")
def browser_server(django_db_setup, redis_url, browser_key_prefix, tmp_path_factory) -> Iterator[LiveServer]:
    """The production server on the test database, one worker, with the admin's static files."""
    home = tmp_path_factory.mktemp("browser-server")
    static_files_collect(home / "var")
    with LiveServer(home, redis_url=redis_url, key_prefix=browser_key_prefix, workers=1) as server:
        yield server


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    opened = new_page(browser)
    yield opened
    opened.context.close()


@pytest.fixture
def operator(transactional_db) -> User:
    """A superuser: what an operator may do, the admin lets them do."""
    return staff_user_create("operator", OPERATOR_PASSWORD, superuser=True)
