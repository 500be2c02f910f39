"""A usage export job's page in a real headless Chromium: the job's fields under the progress bar follow the job
as the bar does, so a finished bar never sits over "queued" and "0" rows; the title names the chosen range."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.reports.models import ExportJob
from apps.reports.services import export_job_run
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.reports.factories import ExportJobFactory
from tests.reports.usage_set import usage_generate
from tests.support.browser import admin_login, staff_user_create

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def field(page, name: str) -> str:
    return page.locator(f'[data-job-field="{name}"]').inner_text()


def progress_fields(page) -> tuple[str, str, str]:
    return field(page, "status"), field(page, "rows_done"), field(page, "rows_total")


def test_the_job_fields_follow_the_progress_bar_to_done(browser_server, page, settings) -> None:
    settings.VAR_DIR = Path(browser_server.env["VAR_DIR"])  # the job writes where the server serves from
    count = usage_generate("hour")
    job = ExportJobFactory(requested_by=None, format="csv")
    staff_user_create("exporter", OPERATOR_PASSWORD, permissions=("export_usage",))
    admin_login(page, browser_server.url, "exporter", OPERATOR_PASSWORD)

    page.goto(f"{browser_server.url}/admin/reports/exportjob/{job.pk}/change/")
    assert page.locator("h1").inner_text() == (
        f"Usage export #{job.pk}: 2026-03-01 to 2026-03-04 (UTC), per hour, every customer, as CSV"
    )
    assert progress_fields(page) == ("queued", "0", "not counted yet")

    ExportJob.objects.filter(pk=job.pk).update(status="running", rows_done=30, rows_total=120)
    page.wait_for_function("document.getElementById('export-progress-bar').value === 30")
    assert progress_fields(page) == ("running", "30", "120")

    ExportJob.objects.filter(pk=job.pk).update(status="queued", rows_done=0, rows_total=None)
    assert export_job_run(job_id=job.pk).status == "done"
    page.locator(".export-download").wait_for(state="visible")
    assert page.locator("#export-progress-bar").evaluate("bar => [bar.value, bar.max]") == [1, 1]
    assert progress_fields(page) == ("done", f"{count:,}", f"{count:,}")
    assert field(page, "finished_at").endswith(" UTC")
    assert "queued" not in page.locator("#content-main").inner_text()
