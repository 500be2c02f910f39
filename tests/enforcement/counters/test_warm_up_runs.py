"""Who runs the warm-up: the beat job (recorded like the others), manage.py warm_counters, a check's first seed."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from apps.alerts.models import JobOutcome
from apps.enforcement.counters import warm_trigger
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.engine import CheckItem
from apps.ops.jobs import job_run
from tests.api_fixtures import NOON_MS
from tests.enforcement.counters.warm_fixtures import (
    CountingSeeder,
    CountingStore,
    durable_limit,
    record_spending,
    spec_of,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(redis_client, key_prefix, clock):
    clock.set(NOON_MS + 30 * 60_000)  # the hour's window began at 12:00
    store = CountingStore(redis_client, key_prefix=key_prefix, clock=clock, seeder=CountingSeeder())
    engine_store_use(store)
    yield store
    engine_store_use(None)


def test_the_beat_job_warms_once_then_only_looks_and_records_its_outcome(store, redis_client) -> None:
    spec = spec_of(durable_limit("fixed_window"))
    record_spending(store._layout, spec, CheckItem("acct-1", "Op"), [(store.now_hint_ms() - 1000, 3)])

    first, second = job_run("warm_counters"), job_run("warm_counters")

    assert (first["cold"], first["counters"]) == (1, 1)
    assert (second["cold"], second["summary"]) == (0, "counters warm")
    assert JobOutcome.objects.get(name="warm_counters").failures_in_a_row == 0


def test_the_command_prints_how_many_counters_and_how_long(store) -> None:
    spec = spec_of(durable_limit("calendar"))
    for n in range(3):
        record_spending(store._layout, spec, CheckItem(f"acct-{n}", "Op"), [(store.now_hint_ms() - 1000, 1)])
    out, err = io.StringIO(), io.StringIO()

    call_command("warm_counters", stdout=out, stderr=err)

    assert "3 durable counters rebuilt in " in out.getvalue()
    assert "warm-up" in err.getvalue()  # the progress bar


def test_a_check_that_needs_a_seed_asks_for_a_run_at_most_every_few_seconds(store, monkeypatch) -> None:
    asked: list[list[str]] = []
    monkeypatch.setattr(warm_trigger, "_trigger", asked.append)
    monkeypatch.setattr(warm_trigger, "_last_asked", [float("-inf")])
    spec = spec_of(durable_limit("fixed_window"))

    store.check(CheckItem("acct-1", "Op"), [spec])
    store.check(CheckItem("acct-2", "Op"), [spec])

    assert len(asked) == 1
    assert asked[0][0].startswith("c:{c=acct-1}:fw")
