"""A usage export job's page in a real headless Chromium: the progress bar follows the job as it runs,
and the download link appears when it is done and serves the file."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.utils import timezone

from apps.reports.models import ExportJob
from apps.reports.services import STALE_AFTER, export_job_run
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.reports.factories import ExportJobFactory
from tests.reports.usage_set import PARSERS, all_days, db_rows, usage_generate
from tests.support.browser import admin_login, staff_user_create

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_progress_bar_follows_a_running_job_and_the_link_downloads_the_file(
    browser_server, page, settings, tmp_path
) -> None:
    settings.VAR_DIR = Path(browser_server.env["VAR_DIR"])  # the job writes where the server serves from
    count = usage_generate("hour")
    job = ExportJobFactory(requested_by=None, format="csv")
    staff_user_create("exporter", OPERATOR_PASSWORD, permissions=("export_usage",))
    admin_login(page, browser_server.url, "exporter", OPERATOR_PASSWORD)

    page.goto(f"{browser_server.url}/admin/reports/exportjob/{job.pk}/change/")
    bar, message = page.locator("#export-progress-bar"), page.locator("#export-message")
    link = page.locator(".export-download")
    assert message.inner_text() == "Waiting for a worker to start it."
    assert link.is_hidden()

    ExportJob.objects.filter(pk=job.pk).update(status="running", rows_done=30, rows_total=120)
    page.wait_for_function("document.getElementById('export-progress-bar').value === 30")
    assert bar.evaluate("bar => bar.max") == 120
    assert message.inner_text() == "Written 30 of 120 rows."

    # The run that stopped at 30 rows lost its worker; a redelivered task takes the job over and finishes it.
    assert export_job_run(job_id=job.pk, now=timezone.now() + STALE_AFTER + dt.timedelta(seconds=1)).status == "done"
    link.wait_for(state="visible")
    assert message.inner_text() == f"Done: {count} rows."
    assert bar.evaluate("bar => [bar.value, bar.max]") == [1, 1]
    with page.expect_download() as download:
        link.click()
    saved = tmp_path / "downloaded.csv"
    download.value.save_as(saved)
    assert download.value.suggested_filename == "usage-hour-20260301T000000Z-20260305T000000Z.csv"
    assert PARSERS["csv"](saved.read_bytes()) == db_rows(all_days())
