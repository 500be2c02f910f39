"""A real headless Chromium for browser tests: Debian's `chromium` driven by Playwright.

Playwright never downloads a browser here (the machine's network is closed): it launches the system
binary, installed on first use by tests/support/debian.py. The server under test is the production
gunicorn configuration (tests/support/live_server.py) with the admin's static files collected into its
STATIC_ROOT, so pages look and behave as in production (WhiteNoise serves them with DEBUG off).

    with chromium() as browser, LiveServer(tmp, redis_url=..., key_prefix=...) as server:
        page = browser.new_page()
        admin_login(page, server.url, "operator", "secret")

tests/browser/conftest.py turns these into fixtures: `browser`, `browser_server`, `page`, `operator`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import override_settings
from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.debian import ensure_binary

CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",  # tests run as root in containers, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# Long enough for a page of a loaded 2-core machine; short enough that a hang fails in seconds, not minutes.
DEFAULT_TIMEOUT_MS = 15_000
# Playwright's sync API keeps an asyncio loop running in this thread (in a greenlet), which makes Django
# refuse ORM calls from test code ("You cannot call this from an async context"). The test's ORM calls are
# plain synchronous code, so telling Django so is safe here.
ASYNC_UNSAFE_VARIABLE = "DJANGO_ALLOW_ASYNC_UNSAFE"


def chromium_path() -> str:
    """Debian's chromium, installed with apt-get on first use when missing."""
    return ensure_binary("chromium", "chromium")


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium for the duration of the block; closed (and Playwright stopped) afterwards."""
    previous = os.environ.get(ASYNC_UNSAFE_VARIABLE)
    os.environ[ASYNC_UNSAFE_VARIABLE] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium_path(), headless=True, args=list(CHROMIUM_ARGS)
            )
            try:
                yield browser
            finally:
                browser.close()
    finally:
        if previous is None:
            os.environ.pop(ASYNC_UNSAFE_VARIABLE, None)
        else:
            os.environ[ASYNC_UNSAFE_VARIABLE] = previous


def static_files_collect(var_dir: Path) -> Path:
    """Collect static files into `var_dir`/static: the STATIC_ROOT of a LiveServer whose VAR_DIR is `var_dir`."""
    root = var_dir / "static"
    with override_settings(STATIC_ROOT=root):
        call_command("collectstatic", interactive=False, verbosity=0)
    return root


def new_page(browser: Browser) -> Page:
    """A page in a context of its own (own cookies, so own login), with DEFAULT_TIMEOUT_MS for every wait."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    return context.new_page()


# The test process hashes with MD5 for speed (tests/conftest.py), a hasher the server does not accept.
# A PBKDF2 hash with few iterations is accepted by the server's default hashers (and upgraded on login).
TEST_PBKDF2_ITERATIONS = 1000


def server_password_hash(password: str) -> str:
    """A password hash the production server can check."""
    return PBKDF2PasswordHasher().encode(password, "browser-test-salt", iterations=TEST_PBKDF2_ITERATIONS)


def staff_user_create(
    username: str, password: str, *, superuser: bool = False, permissions: tuple[str, ...] = ()
) -> User:
    """A staff user the server lets log in; `permissions` are codenames such as "view_limit"."""
    user = User.objects.create(username=username, is_staff=True, is_superuser=superuser)
    user.password = server_password_hash(password)
    user.save(update_fields=["password"])
    if permissions:
        user.user_permissions.set(Permission.objects.filter(codename__in=permissions))
    return user


class LoginFailed(AssertionError):
    pass


def admin_login(page: Page, base_url: str, username: str, password: str) -> None:
    """Log in through the admin's login form; raise with the page's own error text if it refuses."""
    page.goto(f"{base_url}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_load_state()
    if "/admin/login/" in page.url:
        error = page.locator(".errornote").all_inner_texts()
        raise LoginFailed(f"The admin refused {username!r}: {' '.join(error) or page.title()}")
