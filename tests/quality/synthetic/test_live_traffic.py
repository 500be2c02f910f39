"""The generator against a real platform: what it records of its own sessions is consistent with the limits
the platform enforced (never more held at once than the concurrency limit, never more opened per sliding
window than the openings limit), and the aggressive users reach their limits while the common ones do not.
Slow: a real gunicorn server and several seconds of traffic."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from apps.quality.synthetic import Generator, TrafficRecord
from apps.quality.synthetic.scenario import AGGRESSIVE_PLAN, COMMON_PLAN
from tests.quality.synthetic.conftest import COMMAND, LIVE
from tests.quality.synthetic.live import SyntheticPlatform

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def live_run(platform: SyntheticPlatform) -> tuple[Generator, TrafficRecord]:
    generator = Generator(LIVE, platform.url, platform.api_key)
    seen: list[tuple[float, int]] = []
    record = generator.run(lambda elapsed, sessions: seen.append((elapsed, sessions)))
    assert seen, "the progress callback was never called"
    return generator, record


def test_no_user_thread_met_an_error(live_run) -> None:
    generator, _ = live_run

    assert generator.errors == []


def test_nobody_held_more_sessions_at_once_than_the_concurrency_limit(live_run) -> None:
    _, record = live_run

    held = {customer: row.max_parallel() for customer, row in record.customers.items()}

    assert max(held.values()) <= LIVE.concurrency, held
    # The aggressive users hold every slot they are granted at some moment, and ask for one more.
    assert {held[c] for c in LIVE.aggressive_customers()} == {LIVE.concurrency}, held
    assert all(record.customers[c].refused.get("OVER_LIMIT", 0) > 0 for c in LIVE.aggressive_customers())


def test_nobody_opened_more_sessions_per_window_than_the_openings_limit(live_run) -> None:
    _, record = live_run
    window_ms = LIVE.openings_period_s * 1000

    opened = {customer: row.max_openings(window_ms) for customer, row in record.customers.items()}

    assert max(opened.values()) <= LIVE.openings, opened
    assert {opened[c] for c in LIVE.aggressive_customers()} == {LIVE.openings}, opened
    assert all(opened[c] < LIVE.openings for c in LIVE.common_customers()), opened


def test_checks_admitted_per_window_never_pass_the_window_limit(live_run) -> None:
    _, record = live_run

    aggressive = [record.customers[c] for c in LIVE.aggressive_customers()]

    assert all(row.checks_window_max <= LIVE.queries for row in record.customers.values())
    assert all(row.checks_window_max == LIVE.queries and row.checks_denied > 0 for row in aggressive)


def test_common_users_open_short_sessions_and_leave_some_to_expire(live_run) -> None:
    _, record = live_run
    common = [record.customers[c] for c in LIVE.common_customers()]

    assert all(row.group == COMMON_PLAN and row.sessions for row in common)
    assert sum(row.abandoned() for row in common) > 0
    for row in common:
        for session in row.sessions:
            assert session.expires_ms - session.opened_ms == LIVE.ttl_s * 1000
            assert 0 < session.end_ms - session.opened_ms <= LIVE.ttl_s * 1000


def test_aggressive_users_hold_far_more_session_time_than_common_ones(live_run) -> None:
    _, record = live_run

    common = max(record.customers[c].session_seconds() for c in LIVE.common_customers())
    aggressive = [record.customers[c] for c in LIVE.aggressive_customers()]

    assert all(row.group == AGGRESSIVE_PLAN and row.session_seconds() > 2 * common for row in aggressive)


@pytest.mark.django_db
def test_the_command_runs_the_scenario_and_prints_the_record_as_json(platform: SyntheticPlatform) -> None:
    out, err = StringIO(), StringIO()

    call_command(
        "generate_traffic", "--url", platform.url, "--api-key", platform.api_key, "--prefix", COMMAND.prefix,
        "--seed", str(COMMAND.seed), "--duration", str(COMMAND.duration_s), "--common", str(COMMAND.common),
        "--aggressive", str(COMMAND.aggressive), "--json", stdout=out, stderr=err,
    )  # fmt: skip

    printed = json.loads(out.getvalue())
    assert printed["errors"] == []
    assert {row["customer"] for row in printed["customers"]} == set(COMMAND.groups())
    assert all(row["max_parallel"] <= COMMAND.concurrency for row in printed["customers"])
    assert sum(row["sessions"] for row in printed["customers"]) > 0
    assert "traffic" in err.getvalue()  # the progress bar
