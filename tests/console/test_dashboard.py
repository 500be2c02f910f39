"""The operators' dashboard on the admin index: throttled customers, customers near a limit, platform health."""

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.alerts.models import JobOutcome
from apps.common.metrics import decision_counted
from apps.console import dashboard
from apps.console.dashboard import dashboard_build
from apps.limits.snapshot import config_version_bump
from apps.ops.jobs import JOBS, job_run
from apps.ops.periodic_tasks import periodic_tasks_setup
from apps.ops.tasks import refresh_toggles_task
from apps.usage.models import UsageHour, UsageMinute
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


def minute(ago: int) -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=ago)


def this_hour() -> dt.datetime:
    return timezone.now().replace(minute=0, second=0, microsecond=0)


def test_the_most_throttled_now_come_from_the_last_minutes_and_today_from_the_hours(engine) -> None:
    UsageMinute.objects.create(customer="acct-1", operation="Op", bucket=minute(2), allowed=10, denied=30)
    UsageMinute.objects.create(customer="acct-2", operation="Op", bucket=minute(5), allowed=10, denied=40)
    UsageMinute.objects.create(customer="acct-3", operation="Op", bucket=minute(60), denied=99)
    UsageMinute.objects.create(customer="acct-4", operation="Op", bucket=minute(1), allowed=500)
    UsageHour.objects.create(customer="acct-3", operation="Op", bucket=this_hour(), allowed=1, denied=99)

    board = dashboard_build()

    assert [(row.customer, row.denied) for row in board.throttled_now] == [("acct-2", 40), ("acct-1", 30)]
    assert board.throttled_now[0].denied_share == 0.8
    assert [row.customer for row in board.throttled_today] == ["acct-3"]


def test_customers_above_80_percent_of_a_limit_are_listed_fullest_first(engine, api) -> None:
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=10)
    for customer, checks in (("acct-1", 9), ("acct-2", 5), ("acct-3", 10)):
        CustomerFactory(external_id=customer)
        UsageHour.objects.create(customer=customer, operation="ListStreams", bucket=this_hour(), allowed=checks)
        for _ in range(checks):
            api.post("/api/v1/check", {"customer": customer, "operation": "ListStreams"}, format="json")

    board = dashboard_build()

    assert [(near.customer, near.limit, near.percent) for near in board.near_limits] == [
        ("acct-3", "streams", 100),
        ("acct-1", "streams", 90),
    ]


def test_platform_status_config_version_and_jobs_are_reported(engine) -> None:
    periodic_tasks_setup()
    sent = timezone.now() - dt.timedelta(minutes=3)
    PeriodicTask.objects.filter(name="flush_usage").update(last_run_at=sent, total_run_count=7)
    config_version_bump()

    board = dashboard_build()

    assert {(service.name, service.ok) for service in board.services} == {("PostgreSQL", True), ("Redis", True)}
    assert board.config.version >= 1
    jobs = {job.name: job for job in board.jobs}
    assert set(jobs) == set(JOBS)
    assert (jobs["flush_usage"].last_sent_at, jobs["flush_usage"].last_run_at) == (sent, None)
    assert all(job.scheduled and job.enabled for job in jobs.values())


def test_a_job_shows_its_real_last_run_as_soon_as_it_ran_not_when_beat_writes_back(admin_client, engine) -> None:
    periodic_tasks_setup()  # beat has sent nothing yet: its rows say never
    before = timezone.now()

    job_run("rollup_usage")
    board = dashboard_build()
    page = admin_client.get("/admin/").content.decode()

    jobs = {job.name: job for job in board.jobs}
    assert jobs["rollup_usage"].last_run_at >= before
    assert jobs["rollup_usage"].last_sent_at is None
    assert (jobs["rollup_usage"].failures_in_a_row, jobs["flush_usage"].last_run_at) == (0, None)
    row = page[page.index('<tr data-job="rollup_usage">') :].split("</tr>")[0]
    assert "0\xa0minutes ago" in row
    assert '<span class="status-ok">ok</span>' in row


def test_degraded_decisions_are_counted_by_operation(engine) -> None:
    before = dashboard_build().degraded.by_operation
    decision_counted(operation="DashboardTestOp", outcome="OK", degraded=3, count=3)

    after = dict(dashboard_build().degraded.by_operation)

    assert after["DashboardTestOp"] == dict(before).get("DashboardTestOp", 0) + 3


def test_the_index_shows_the_dashboard_with_a_chart_and_a_never_run_job(admin_client, engine) -> None:
    UsageMinute.objects.create(customer="acct-9", operation="Op", bucket=minute(1), allowed=1, denied=3)

    page = admin_client.get("/admin/").content.decode()

    assert 'id="quota-dashboard"' in page
    assert 'data-label="acct-9" data-value="3"' in page
    assert "not scheduled: run manage.py setup_periodic_tasks" in page
    assert "PostgreSQL: up" in page
    assert "Redis: up</span> — answered in" in page


def test_without_redis_the_panel_says_redis_is_not_configured_and_what_needs_it(admin_client, engine, settings) -> None:
    settings.REDIS_URL = settings.COUNTERS_REDIS_URL = ""  # the embedded default

    page = admin_client.get("/admin/").content.decode()

    panel = page[page.index('id="platform-status"') :].split("</section>")[0]
    assert "Redis: not configured</span> — counters are in-process (embedded default)" in panel
    assert "the decision log and usage-share alerts need Redis (production setup: set REDIS_URL)" in panel
    assert "Redis: up" not in panel


def test_the_platform_panel_names_the_database_in_use(admin_client, engine, monkeypatch, tmp_path) -> None:
    from django.db import connections
    from django.db.backends.sqlite3.base import DatabaseWrapper

    from apps.ops import readiness

    settings_dict = {**connections["default"].settings_dict, "ENGINE": "django.db.backends.sqlite3", "OPTIONS": {}}
    sqlite = DatabaseWrapper({**settings_dict, "NAME": str(tmp_path / "db.sqlite3")}, alias="dashboard-sqlite")
    monkeypatch.setattr(readiness, "database_connection", lambda: sqlite)

    try:
        page = admin_client.get("/admin/").content.decode()
    finally:
        sqlite.close()

    panel = page[page.index('id="platform-status"') :].split("</section>")[0]
    assert "SQLite: up" in panel
    assert "PostgreSQL" not in panel


def test_a_panel_that_fails_says_so_and_the_others_still_show(admin_client, engine, monkeypatch) -> None:
    def broken():
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(dashboard, "job_statuses", broken)

    response = admin_client.get("/admin/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "The beat schedule could not be read (disk on fire)." in page
    assert "PostgreSQL: up" in page


def test_the_dashboard_needs_permission_to_view_customers(client, engine) -> None:
    client.force_login(User.objects.create_user("guest", password="pw", is_staff=True))
    UsageMinute.objects.create(customer="acct-secret", operation="Op", bucket=minute(1), denied=3)

    page = client.get("/admin/").content.decode()

    assert "acct-secret" not in page
    assert "it needs the “Can view customer” permission" in page


def test_the_dashboard_links_the_platform_traffic_and_quality_pages(admin_client, engine) -> None:
    page = admin_client.get("/admin/").content.decode()

    assert '<a href="/admin/console/traffic/">Platform traffic</a>' in page
    assert '<a href="/admin/console/quality/">Quality: audits of the decision log</a>' in page
    assert admin_client.get("/admin/console/traffic/").status_code == 200


def test_refresh_toggles_records_its_outcome_like_the_other_beat_jobs(admin_client, engine, settings, tmp_path) -> None:
    periodic_tasks_setup()
    settings.QUOTA_TOGGLES_LKG_PATH = tmp_path / "lkg.json"
    settings.QUOTA_TOGGLES_SOURCE = str(tmp_path / "absent.json")  # the source cannot be read: the run failed

    refresh_toggles_task.apply().get()
    refresh_toggles_task.apply().get()
    failed = JobOutcome.objects.get(name="refresh_toggles")
    page = admin_client.get("/admin/").content.decode()
    row = page[page.index('<tr data-job="refresh_toggles">') :].split("</tr>")[0]

    assert failed.failures_in_a_row == 2
    assert failed.last_error.startswith("source: ")
    assert "not yet" not in row
    assert "failed 2 times in a row" in row

    settings.QUOTA_TOGGLES_SOURCE = ""  # no source: a run with nothing to do is a success
    refresh_toggles_task.apply().get()
    recovered = JobOutcome.objects.get(name="refresh_toggles")
    assert (recovered.failures_in_a_row, recovered.last_success_at is not None) == (0, True)


def test_a_callers_own_local_limiter_refusals_do_not_make_it_the_most_throttled(admin_client, engine) -> None:
    UsageMinute.objects.create(customer="acct-shaping", operation="Op", bucket=minute(1), allowed=10, denied=900,
                               local_denied=900)  # fmt: skip
    UsageMinute.objects.create(customer="acct-refused", operation="Op", bucket=minute(1), allowed=10, denied=30,
                               local_denied=5)  # fmt: skip
    UsageHour.objects.create(customer="acct-shaping", operation="Op", bucket=this_hour(), denied=900, local_denied=900)

    board = dashboard_build()
    page = admin_client.get("/admin/").content.decode()

    assert [(row.customer, row.throttled, row.local_denied) for row in board.throttled_now] == [("acct-refused", 25, 5)]
    assert board.throttled_today == []
    assert 'data-label="acct-shaping"' not in page
    row = page[page.index('<tr data-customer="acct-refused">') :].split("</tr>")[0]
    assert '<td class="throttled">25</td>' in row
    assert '<td class="local-denied">5</td>' in row
    assert "Also refused by its own local limiter" in page
