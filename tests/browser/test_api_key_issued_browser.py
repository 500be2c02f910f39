"""Issuing an API key in a real headless Chromium: the form redirects to a page that shows the secret once in a
success box; reloading that page shows it no more."""

from __future__ import annotations

import hashlib
import re

import pytest

from apps.apikeys.models import ApiKey
from tests.apikeys.factories import ServiceFactory
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.support.browser import admin_login

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ISSUED_PATH = re.compile(r"/admin/apikeys/apikey/(\d+)/issued/$")


def test_an_operator_issues_a_key_sees_it_once_and_a_reload_does_not_show_it_again(
    browser_server, page, operator
) -> None:
    service = ServiceFactory(name="billing")
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)

    page.goto(f"{browser_server.url}/admin/apikeys/apikey/add/?service={service.pk}")  # the autocomplete, chosen
    page.fill("#id_name", "nightly export")
    page.click("input[name=_save]")
    page.wait_for_load_state()

    assert ISSUED_PATH.search(page.url), f"the form should redirect to the key's page, not stay on {page.url}"
    assert page.locator(".messagelist .success").is_visible()
    assert page.locator(".errornote").count() == 0
    secret = page.locator("#issued-api-key").input_value()
    assert hashlib.sha256(secret.encode()).hexdigest() == ApiKey.objects.get().key_hash

    page.reload()
    assert page.locator("#issued-api-key").count() == 0
    assert "was shown once" in page.locator("#api-key-not-shown").inner_text()
    assert secret not in page.content()
