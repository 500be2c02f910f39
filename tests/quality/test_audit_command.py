"""`manage.py audit_quality` over a drained log: exit status, summary, violations with time and key, the
degraded minutes apart, the run kept."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from apps.customers.models import Customer, Plan
from apps.ops.jobs import job_run
from apps.quality.models import AuditRun
from apps.usage.models import UsageMinute
from tests.quality.logs import decision, drain, lease, minute_ms, write
from tests.servers import repository_root

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def window(redis_client, key_prefix) -> int:
    """A minute, 30 minutes ago, whose fixed window (2 per minute) admitted 2 for acme and 1 for bob."""
    start = minute_ms(dt.datetime.now(dt.UTC)) - 30 * 60_000
    write(redis_client, key_prefix, decision(start + 1), decision(start + 2), decision(start + 3, "deny"))
    write(redis_client, key_prefix, decision(start + 4, customer="bob"), customer="bob")
    write(redis_client, key_prefix, lease(start + 5, "acquire", "m1", expires_ms=start + 50_000),
          lease(start + 9, "release", "m1"))  # fmt: skip
    return start


def audit(start: int, *options: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    begin = dt.datetime.fromtimestamp(start / 1000, tz=dt.UTC).isoformat()
    end = dt.datetime.fromtimestamp((start + 10 * 60_000) / 1000, tz=dt.UTC).isoformat()
    try:
        call_command("audit_quality", "--from", begin, "--to", end, *options, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def utc(at_ms: int) -> str:
    return dt.datetime.fromtimestamp(at_ms / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_the_text_shows_times_in_utc_iso_and_no_python_none(window, redis_client, key_prefix) -> None:
    drain(redis_client, key_prefix)

    _, out, _ = audit(window)
    _, empty, _ = audit(window - 3_600_000)  # an hour with no log

    assert f"events: 6 from {utc(window + 1)} to {utc(window + 9)}" in out.splitlines()
    assert "events: 0 (none in the range)" in empty.splitlines()
    for text in (out, empty):
        assert "None" not in text
        assert str(window)[:8] not in text  # no epoch milliseconds anywhere


def test_a_log_where_every_limit_held_exits_0_and_keeps_the_run(window, redis_client, key_prefix) -> None:
    drain(redis_client, key_prefix)

    code, out, err = audit(window)

    assert code == 0, out
    assert "audited 6 log entries" in out
    assert "0 violations" in out
    assert "VIOLATION" not in out
    assert "audit" in err  # the progress bar
    run = AuditRun.objects.get()
    assert (run.events, run.violations, run.trigger) == (6, 0, "command")
    assert run.finished_at is not None
    assert run.report["violation_count"] == 0


def test_one_admission_too_many_exits_1_and_names_its_time_and_key(window, redis_client, key_prefix) -> None:
    write(redis_client, key_prefix, decision(window + 30_000))  # a third admission in the same window
    drain(redis_client, key_prefix)

    code, out, _ = audit(window)

    assert code == 1
    violations = [line for line in out.splitlines() if line.startswith("VIOLATION")]
    assert len(violations) == 1
    assert f"at {utc(window + 30_000)}" in violations[0]  # ISO 8601 UTC, never raw epoch ms
    assert "customer=acme" in violations[0]
    assert "key=qp:c:{c=acme}:per-minute" in violations[0]
    assert AuditRun.objects.get().violations == 1


def test_filters_narrow_the_log_read(window, redis_client, key_prefix) -> None:
    write(redis_client, key_prefix, decision(window + 30_000))  # acme's violation
    drain(redis_client, key_prefix)
    gold = Plan.objects.create(name="gold")
    Customer.objects.create(external_id="bob", plan=gold)
    Customer.objects.create(external_id="acme")

    by_customer = audit(window, "--customer", "bob")
    by_group = audit(window, "--group", "gold")
    by_limit = audit(window, "--limit", "sessions")

    assert by_customer[0] == 0
    assert "audited 1 log entries" in by_customer[1]
    assert by_group[0] == 0
    assert "audited 1 log entries" in by_group[1]
    assert by_limit[0] == 0
    assert "audited 2 log entries" in by_limit[1]
    assert AuditRun.objects.get(filters={"group": "gold"}).events == 1


def test_json_format_is_the_report_with_the_run(window, redis_client, key_prefix) -> None:
    write(redis_client, key_prefix, decision(window + 30_000))
    drain(redis_client, key_prefix)

    code, out, _ = audit(window, "--format", "json")

    body = json.loads(out)
    assert code == 1
    assert body["violation_count"] == 1
    assert body["violations"][0]["at_ms"] == window + 30_000
    assert body["audit_run"] == AuditRun.objects.get().pk
    assert body["degraded"]["minutes"] == 0


def test_degraded_minutes_are_reported_apart_as_unchecked(window, redis_client, key_prefix) -> None:
    drain(redis_client, key_prefix)
    bucket = dt.datetime.fromtimestamp((window + 60_000) / 1000, tz=dt.UTC)
    UsageMinute.objects.create(customer="acme", operation="PutRecords", bucket=bucket, allowed=5, degraded=5, costs={})

    code, out, _ = audit(window)

    assert code == 0
    assert "not in the log and were not checked" in out
    assert f"DEGRADED {bucket:%Y-%m-%d %H:%M} customer=acme operation=PutRecords: 5 decisions" in out
    assert AuditRun.objects.get().degraded_minutes == 1


def test_a_range_that_is_not_one_is_refused() -> None:
    with pytest.raises(CommandError, match="range is empty"):
        call_command("audit_quality", "--from", "2025-01-02", "--to", "2025-01-01", stdout=io.StringIO())


def test_without_redis_nothing_is_audited_and_the_command_says_why_with_status_2(settings) -> None:
    """The embedded default writes no decision log: an audit would read nothing and report "0 violations"."""
    settings.REDIS_URL = settings.COUNTERS_REDIS_URL = ""

    with pytest.raises(CommandError, match=r"The decision log needs Redis \(production setup: set REDIS_URL\)") as err:
        call_command("audit_quality", stdout=io.StringIO())

    assert err.value.returncode == 2
    assert "nothing was audited" in str(err.value)
    assert not AuditRun.objects.exists()


def test_without_redis_the_daily_audit_job_says_it_audited_nothing_and_keeps_no_run(settings) -> None:
    settings.REDIS_URL = settings.COUNTERS_REDIS_URL = ""

    report = job_run("audit_quality")

    assert report["summary"].startswith("The decision log needs Redis (production setup: set REDIS_URL)")
    assert report["audit_run"] is None
    assert "violations" not in report["summary"]
    assert not AuditRun.objects.exists()


@pytest.mark.slow
def test_make_runs_settings_exit_2_from_audit_quality(tmp_path) -> None:
    """The real command under the embedded default's settings (no DATABASE_URL or REDIS_URL), as a newcomer runs it."""
    unset = {"DATABASE_URL", "REDIS_URL", "COUNTERS_REDIS_URL", "CELERY_BROKER_URL"}
    env = {name: value for name, value in os.environ.items() if name not in unset}
    env.update(ENV_FILE="", VAR_DIR=str(tmp_path), SECRET_KEY="embedded-test-key")

    done = subprocess.run(
        [sys.executable, "manage.py", "audit_quality"],
        cwd=repository_root(), env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert done.returncode == 2, done.stderr
    assert "The decision log needs Redis (production setup: set REDIS_URL)" in done.stderr
    assert "violations" not in done.stdout + done.stderr
