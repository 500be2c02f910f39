"""The limit editor, the YAML import page, the change history at 1366 px and "View site", in a real Chromium
against the production server (static files collected, WhiteNoise serving limit_editor.js)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.history.models import ChangeEvent
from apps.limits.models import Limit
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.limits.factories import LimitFactory, OperationFactory
from tests.support.browser import admin_login
from tests.support.live_server import LiveServer

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DEPENDENT = ("period_seconds", "calendar_period", "burst", "sync_ms", "unit")


@pytest.fixture
def saving_server(browser_server, redis_url, browser_key_prefix, tmp_path: Path) -> Iterator[LiveServer]:
    """A server started after this test's database was reset, for tests whose saves write the change history.

    The session's server caches content type ids on first use; the reset between transactional tests gives the
    content types new ids, so its later history rows would point at ids that no longer exist. This one shares
    the session server's collected static files.
    """
    with LiveServer(
        tmp_path, redis_url=redis_url, key_prefix=browser_key_prefix, workers=1, VAR_DIR=browser_server.env["VAR_DIR"]
    ) as server:
        yield server


def visible_fields(page) -> set[str]:
    return {name for name in DEPENDENT if page.locator(f".form-row.field-{name}").is_visible()}


def test_the_editor_hides_what_the_algorithm_does_not_use_and_saves_rows(saving_server, page, operator) -> None:
    browser_server = saving_server
    operation = OperationFactory(name="ModifyShardCount")
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)
    page.goto(f"{browser_server.url}/admin/limits/limit/add/?operation={operation.pk}")

    seen = {}
    for algorithm in ("fixed_window", "calendar", "token_bucket", "concurrency", "sliding_log"):
        page.select_option("#id_algorithm", algorithm)
        seen[algorithm] = visible_fields(page)
    assert seen == {
        "fixed_window": {"period_seconds", "sync_ms", "unit"},
        "calendar": {"calendar_period", "sync_ms", "unit"},
        "token_bucket": {"period_seconds", "burst", "unit"},
        "concurrency": {"period_seconds"},
        "sliding_log": {"period_seconds", "unit"},
    }
    assert page.locator("label", has_text="Limit:").first.is_visible()

    page.select_option("#id_algorithm", "calendar")
    page.fill("#id_name", "scaling-daily")
    page.fill("#id_quantity", "10")
    page.select_option("#id_calendar_period", "day")
    page.check("input[name=key_by_part][value=customer]")
    page.fill("input[name=key_by_attr] >> nth=0", "stream")
    match = page.locator(".match-editor")
    for _ in range(2):
        page.locator(".field-match button.add-row").click()
    assert match.locator(".editor-row").count() == 4
    for row, (key, value) in enumerate((("ScalingType", "UniformScaling"), ("region", "eu"), ("tier", "gold"))):
        page.fill(f"input[name=match_key] >> nth={row}", key)
        page.fill(f"input[name=match_value] >> nth={row}", value)
    page.click("input[name=_save]")
    page.locator(".messagelist .success").wait_for()

    limit = Limit.objects.get(name="scaling-daily")
    assert (limit.algorithm, limit.calendar_period, limit.period_seconds) == ("calendar", "day", None)
    assert limit.unit == "requests"
    assert limit.key_by == ["customer", "attr:stream"]
    assert limit.match == {"ScalingType": "UniformScaling", "region": "eu", "tier": "gold"}


def test_a_limit_of_zero_is_refused_with_a_sentence_on_the_field(browser_server, page, operator) -> None:
    limit = LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=5)
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)
    page.goto(f"{browser_server.url}/admin/limits/limit/{limit.pk}/change/")

    page.fill("#id_quantity", "0")
    page.click("input[name=_save]")

    error = page.locator(".form-row.field-quantity .errorlist")
    assert "The limit must be 1 or more" in error.inner_text()
    assert "Constraint" not in page.locator("#content").inner_text()
    assert Limit.objects.get(pk=limit.pk).quantity == 5


def test_a_yaml_file_is_uploaded_previewed_and_applied(saving_server, page, operator, tmp_path: Path) -> None:
    browser_server = saving_server
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=5, key_by=["customer"])
    upload = tmp_path / "limits.yaml"
    upload.write_text(
        "limits:\n"
        "  - {name: streams, operation: ListStreams, algorithm: fixed_window, limit: 50, period: minute,"
        " key_by: [customer]}\n"
        "  - {name: streams-per-ip, operation: ListStreams, algorithm: sliding_window, limit: 9, period: second,"
        " key_by: [ip]}\n"
    )
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)
    page.goto(f"{browser_server.url}/admin/limits/limit/")
    page.click("text=Import YAML")

    page.set_input_files("input[name=file]", str(upload))
    page.click("#yaml-preview-button")
    table = page.locator('#yaml-diff table[data-section="limits"]')

    assert table.locator("caption").inner_text().lower() == "limits: 1 added, 1 changed, 0 removed"
    changed = table.locator("tr.diff-changed")
    assert [changed.locator(f"td.diff-{cell}").inner_text() for cell in ("entry", "field", "before", "after")] == [
        "streams",
        "limit",
        "5",
        "50",
    ]
    assert table.locator("tr.diff-added td.diff-entry").inner_text() == "streams-per-ip"
    assert Limit.objects.get(name="streams").quantity == 5, "the preview wrote nothing"

    with page.expect_navigation():
        page.click("#yaml-apply")
    message = page.locator(".messagelist .success").inner_text()

    assert "imported in one transaction" in message
    assert Limit.objects.get(name="streams").quantity == 50
    assert Limit.objects.get(name="streams-per-ip").key_by == ["ip"]
    with page.expect_download() as download:
        page.goto(f"{browser_server.url}/admin/limits/limit/yaml/import/")
        page.click("#yaml-export-link")
    assert "name: streams-per-ip" in Path(download.value.path()).read_text()


def test_the_change_history_fits_a_1366_pixel_screen(browser_server, page, operator) -> None:
    for number in range(3):  # each creation is recorded with every field, the long description too
        LimitFactory(name=f"a-limit-with-a-rather-long-name-for-the-history-{number}", description="word " * 80)
    assert ChangeEvent.objects.filter(content_type__model="limit").count() == 3
    page.set_viewport_size({"width": 1366, "height": 768})
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)

    page.goto(f"{browser_server.url}/admin/history/changeevent/")

    results = page.locator("#changelist .results")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    assert results.evaluate("el => el.scrollWidth <= el.clientWidth")
    table, filters = page.locator("#result_list").bounding_box(), page.locator("#changelist-filter").bounding_box()
    assert table["x"] + table["width"] <= filters["x"]
    assert page.locator("#result_list td.field-changes_shown").first.is_visible()


def test_view_site_leads_to_a_landing_page_with_the_ways_in(browser_server, page, operator) -> None:
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)
    page.click("#user-tools >> text=View site")

    assert page.locator("h1").inner_text() == "Quota Platform"
    page.click("#landing-api-docs")
    page.locator(".swagger-ui").wait_for()
    page.go_back()
    page.click("#landing-admin")
    assert page.url.endswith("/admin/")
