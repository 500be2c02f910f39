"""The usage export pages: the form and its errors, an immediate download, a background job with a
progress bar and a download link, and 403 with a sentence for users who may not export."""

import datetime as dt

import pytest
from django.test import Client
from django.urls import reverse

from apps.reports import services
from apps.reports.models import ExportJob
from tests.reports.factories import ExportJobFactory, UserFactory, analyst
from tests.reports.usage_set import PARSERS, all_days, db_rows, usage_generate

pytestmark = pytest.mark.django_db

EXPORT_URL = "/admin/reports/exportjob/add/"
FORM = {"start": "2026-03-01", "end": "2026-03-04", "granularity": "hour", "format": "csv"}


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def analyst_client() -> Client:
    return logged_in(analyst())


def job_url(job, view="change") -> str:
    return reverse(f"admin:reports_exportjob_{view}", args=[job.pk])


def downloaded(response) -> bytes:
    assert response.status_code == 200, response.content[:500]
    return b"".join(response.streaming_content)


def test_the_export_page_is_linked_from_the_admin_index_for_an_analyst(analyst_client) -> None:
    index = analyst_client.get("/admin/")

    assert EXPORT_URL in index.content.decode()
    page = analyst_client.get(EXPORT_URL)
    assert page.status_code == 200
    html = page.content.decode()
    for name in ("customers", "operations", "start", "end", "granularity", "format"):
        assert f'name="{name}"' in html
    for column in ("customer", "bucket", "shadow_denied", "degraded", "rule_denied", "unavailable", "costs"):
        assert f"<code>{column}</code>" in html
    assert "up to 50,000 rows (10,000 as XLSX) downloads at once" in html


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"start": ""}, "start", "This field is required."),
        ({"end": "04/31/2026"}, "end", "Enter a day as YYYY-MM-DD, e.g. 2026-03-01."),
        ({"start": "2026-03-05"}, "end", "The last day (2026-03-04) is before the first day (2026-03-05): swap them."),
        ({"end": "9999-12-31"}, "end", "Pick a day before 9999-12-31."),
        ({"granularity": "week"}, "granularity", "Select a valid choice. week is not one of the available choices."),
        ({"format": "pdf"}, "format", "Select a valid choice. pdf is not one of the available choices."),
        ({"customers": "\n".join(map(str, range(101)))}, "customers", "At most 100 customers per export (got 101)."),
        ({"operations": "x" * 101}, "operations", "Each operation has at most 100 characters; xxx"),
        ({"customers": "acct\x00"}, "customers", "Null characters are not allowed."),
    ],
)
def test_the_form_refuses_bad_input_with_a_clear_message(analyst_client, changes, field, message) -> None:
    response = analyst_client.post(EXPORT_URL, {**FORM, **changes})

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == [field]
    assert errors[field][0].startswith(message)
    assert "Please correct the error below." in response.content.decode()
    assert not ExportJob.objects.exists()


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_a_small_report_downloads_at_once_and_matches_the_database(analyst_client, fmt) -> None:
    usage_generate("hour")

    response = analyst_client.post(
        EXPORT_URL, {**FORM, "format": fmt, "customers": "acct-1\n\n acct-2 \nacct-1", "operations": "PutRecords"}
    )

    data = downloaded(response)
    assert f'filename="usage-hour-20260301T000000Z-20260305T000000Z.{fmt}"' in response["Content-Disposition"]
    filters = all_days(customers=("acct-1", "acct-2"), operations=("PutRecords",))
    assert PARSERS[fmt](data) == db_rows(filters)
    assert len(db_rows(filters)) == 24
    assert not ExportJob.objects.exists()


def test_a_large_report_runs_as_a_job_with_a_progress_bar_and_a_download_link(
    analyst_client, monkeypatch, eager_tasks, django_capture_on_commit_callbacks
) -> None:
    count = usage_generate("hour")
    monkeypatch.setitem(services.IMMEDIATE_MAX_ROWS, "xlsx", 10)

    with django_capture_on_commit_callbacks(execute=False) as dispatch:
        response = analyst_client.post(EXPORT_URL, {**FORM, "format": "xlsx"})

    job = ExportJob.objects.get()
    assert (job.status, job.format, job.requested_by.username) == ("queued", "xlsx", "analyst")
    assert response.status_code == 302
    assert response["Location"] == job_url(job)
    page = analyst_client.get(response["Location"])
    html = page.content.decode()
    assert "built in the background" in html
    assert '<progress id="export-progress-bar"' in html
    assert "reports/export_progress.js" in html
    assert f'data-status-url="{job_url(job, "status")}"' in html
    assert analyst_client.get(job_url(job, "status")).json() == {
        "status": "queued",
        "rows_done": 0,
        "rows_total": None,
        "percent": None,
        "message": "Waiting for a worker to start it.",
        "finished": False,
        "download_url": None,
        "fields": {
            "status": "queued",
            "rows_done": "0",
            "rows_total": "not counted yet",
            "started_at": "not started yet",
            "finished_at": "not finished yet",
            "error": "none",
        },
    }

    for callback in dispatch:  # the commit: the task runs (eagerly, in this process)
        callback()

    status = analyst_client.get(job_url(job, "status")).json()
    assert status.pop("fields")["status"] == "done"
    assert status == {
        "status": "done",
        "rows_done": count,
        "rows_total": count,
        "percent": 100,
        "message": f"Done: {count} rows.",
        "finished": True,
        "download_url": job_url(job, "download"),
    }
    page = analyst_client.get(job_url(job)).content.decode()
    assert f'href="{job_url(job, "download")}"' in page
    assert 'max="1" value="1"' in page
    download = analyst_client.get(status["download_url"])
    assert download["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert 'filename="usage-hour-20260301T000000Z-20260305T000000Z.xlsx"' in download["Content-Disposition"]
    assert PARSERS["xlsx"](downloaded(download)) == db_rows(all_days())


def test_the_status_shows_the_rows_written_so_far_while_a_job_runs(analyst_client) -> None:
    job = ExportJobFactory(status="running", rows_done=250, rows_total=1000)

    status = analyst_client.get(job_url(job, "status")).json()

    assert (status["percent"], status["message"], status["finished"]) == (25, "Written 250 of 1,000 rows.", False)
    assert 'max="1000" value="250"' in analyst_client.get(job_url(job)).content.decode()


def test_a_finished_job_page_lists_done_and_its_rows_not_queued_and_zero(analyst_client) -> None:
    started = dt.datetime(2026, 3, 6, 9, 0, tzinfo=dt.UTC)
    job = ExportJobFactory(status="done", rows_done=1234, rows_total=1234, started_at=started,
                           finished_at=started + dt.timedelta(seconds=42))  # fmt: skip

    html = analyst_client.get(job_url(job)).content.decode()
    fields = analyst_client.get(job_url(job, "status")).json()["fields"]

    assert 'max="1" value="1"' in html, "the bar says done"
    assert fields == {
        "status": "done",
        "rows_done": "1,234",
        "rows_total": "1,234",
        "started_at": "2026-03-06 09:00:00 UTC",
        "finished_at": "2026-03-06 09:00:42 UTC",
        "error": "none",
    }
    for name, text in fields.items():
        assert f'<span data-job-field="{name}">{text}</span>' in html, f"the page shows {name} as the bar's status"
    assert "queued" not in html


def test_the_fields_the_script_rewrites_follow_the_job_as_it_runs(analyst_client) -> None:
    job = ExportJobFactory()
    assert '<span data-job-field="status">queued</span>' in analyst_client.get(job_url(job)).content.decode()

    ExportJob.objects.filter(pk=job.pk).update(status="running", rows_done=250, rows_total=1000)

    fields = analyst_client.get(job_url(job, "status")).json()["fields"]
    assert (fields["status"], fields["rows_done"], fields["rows_total"]) == ("running", "250", "1,000")
    assert 'data-job-field="' in analyst_client.get(job_url(job)).content.decode()


@pytest.mark.parametrize(
    ("changes", "title"),
    [
        ({}, "Usage export #{pk}: 2026-03-01 to 2026-03-04 (UTC), per hour, every customer, as CSV"),
        (
            {"end": dt.datetime(2026, 3, 2, tzinfo=dt.UTC), "granularity": "minute", "customers": ["acct-1"]},
            "Usage export #{pk}: 2026-03-01 (UTC), per minute, customer acct-1, as CSV",
        ),
        (
            {"customers": ["a", "b", "c", "d"], "operations": ["PutRecords"], "format": "xlsx"},
            "Usage export #{pk}: 2026-03-01 to 2026-03-04 (UTC), per hour, customers a, b, c and 1 more, "
            "operation PutRecords, as XLSX",
        ),
        (
            {
                "start": dt.datetime(2026, 3, 1, 10, 30, tzinfo=dt.UTC),
                "end": dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC),
            },
            "Usage export #{pk}: 2026-03-01 10:30 to 2026-03-01 12:00 UTC (end excluded), per hour, every customer, "
            "as CSV",
        ),
    ],
)
def test_the_job_page_title_shows_the_chosen_range(analyst_client, changes, title) -> None:
    job = ExportJobFactory(**changes)

    page = analyst_client.get(job_url(job))

    expected = title.format(pk=job.pk)
    assert page.context["title"] == expected
    assert f"<h1>{expected}</h1>" in page.content.decode()
    assert f"<title>{expected} |" in page.content.decode()


def test_a_failed_job_shows_why_and_offers_no_download(analyst_client) -> None:
    job = ExportJobFactory(status="failed", error="The file could not be written in /var/exports: disk full.")

    status = analyst_client.get(job_url(job, "status")).json()

    assert status["message"] == "Failed: The file could not be written in /var/exports: disk full."
    assert status["download_url"] is None
    response = analyst_client.get(job_url(job, "download"))
    assert response.status_code == 404
    assert "Failed: The file could not be written" in response.content.decode()


@pytest.mark.parametrize(
    "url",
    [
        lambda job: EXPORT_URL,
        lambda job: "/admin/reports/exportjob/",
        lambda job: job_url(job),
        lambda job: job_url(job, "download"),
        lambda job: job_url(job, "delete"),
        lambda job: job_url(job, "history"),
    ],
    ids=["export form", "list", "job page", "download", "delete", "history"],
)
def test_a_staff_user_without_the_permission_gets_403_with_a_sentence(url) -> None:
    job = ExportJobFactory(status="done")
    client = logged_in(UserFactory(username="operator"))

    response = client.get(url(job))

    assert response.status_code == 403
    assert "You may not export usage reports" in response.content.decode()
    assert client.post(EXPORT_URL, FORM).status_code == 403
    assert client.get(job_url(job, "status")).status_code == 403
    assert EXPORT_URL not in client.get("/admin/").content.decode()


def test_a_finished_file_is_served_only_to_users_who_may_export(analyst_client, export_dir) -> None:
    job = ExportJobFactory()
    services.export_job_run(job_id=job.pk)

    assert downloaded(analyst_client.get(job_url(job, "download"))).startswith(b'"customer","operation","bucket",')
    assert logged_in(UserFactory(username="reader")).get(job_url(job, "download")).status_code == 403
    anonymous = Client().get(job_url(job, "download"))
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/admin/login/")


def test_a_superuser_may_export_without_the_permission(admin_client) -> None:
    assert admin_client.get(EXPORT_URL).status_code == 200


def test_deleting_a_job_in_the_admin_removes_its_file(analyst_client) -> None:
    job = services.export_job_run(job_id=ExportJobFactory().pk)
    path = services.export_dir() / job.file_name
    assert path.is_file()

    response = analyst_client.post(job_url(job, "delete"), {"post": "yes"})

    assert response.status_code == 302
    assert not path.exists()
    assert not ExportJob.objects.exists()


def test_an_unknown_job_is_a_404_with_a_sentence(analyst_client) -> None:
    assert analyst_client.get("/admin/reports/exportjob/999/status/").json() == {
        "error": "There is no export #999: it may have been deleted."
    }
    assert "There is no export #999" in analyst_client.get("/admin/reports/exportjob/999/download/").content.decode()
