"""usage_decisions_add with others writing the same rows at once: other writers, a flush, a rollup."""

import datetime as dt
import random
import threading
from collections import Counter

import pytest
from django.db import connection

from apps.engine import ManualClock, MemoryStore
from apps.usage.models import RollupMark, UsageDay, UsageHour, UsageMinute
from apps.usage.services import DecisionCounts, usage_decisions_add, usage_flush, usage_rollup
from apps.usage.services import rollup as rollup_module
from apps.usage.vocabulary import REPORTED as COUNTERS
from tests.usage.factories import minute_number, spend

T = dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.UTC)
M = minute_number(T)
MINUTE_MS = 60_000
WRITERS = 6
ROUNDS = 25
UNITS = ("records", "requests")


def random_rows(rng: random.Random, expected: Counter) -> list[DecisionCounts]:
    """A few decision counts on overlapping keys, in a random order; what they add goes into `expected`."""
    rows = []
    for _ in range(rng.randrange(1, 8)):
        key = (f"acct-{rng.randrange(3)}", rng.choice(["PutRecords", "GetRecords"]), M + rng.randrange(2))
        numbers = {name: rng.randrange(5) for name in COUNTERS}
        costs = {unit: rng.randrange(1, 100) for unit in rng.sample(UNITS, rng.randrange(3))}
        rows.append(DecisionCounts(*key, **numbers, costs=costs))
        for name, value in [*numbers.items(), *costs.items()]:
            expected[(*key, name)] += value
    return rows


def stored_totals() -> Counter:
    found = Counter()
    for row in UsageMinute.objects.all():
        key = (row.customer, row.operation, minute_number(row.bucket))
        for name in COUNTERS:
            found[(*key, name)] += getattr(row, name)
        for unit, amount in row.costs.items():
            found[(*key, unit)] += amount
    return found


def run_threads(targets) -> list[Exception]:
    errors: list[Exception] = []

    def guarded(target):
        try:
            target()
        except Exception as error:  # reported by the caller's assertion
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=guarded, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return errors


@pytest.mark.django_db(transaction=True)
def test_writers_in_several_threads_adding_into_the_same_rows_give_exact_totals() -> None:
    start = threading.Barrier(WRITERS, timeout=20)
    expected = [Counter() for _ in range(WRITERS)]

    def writer(number: int):
        def write():
            rng = random.Random(number)
            start.wait()
            for _ in range(ROUNDS):
                usage_decisions_add(rows=random_rows(rng, expected[number]))

        return write

    assert run_threads([writer(number) for number in range(WRITERS)]) == []

    assert +stored_totals() == +sum(expected, Counter())
    assert UsageMinute.objects.count() == 12, "one row per customer x operation x minute, however many writes"
    assert sorted(RollupMark.objects.values_list("minute", flat=True)) == [M, M + 1]


@pytest.mark.django_db(transaction=True)
def test_a_flush_and_writers_adding_into_the_same_minute_at_once_count_both_exactly() -> None:
    clock = ManualClock(start_ms=M * MINUTE_MS)
    store = MemoryStore(clock=clock)
    flushed = Counter()
    for number in range(30):
        customer = f"acct-{number % 3}"
        spend(store, customer=customer, costs={"records": number})
        flushed[(customer, "PutRecords", M, "allowed")] += 1
        flushed[(customer, "PutRecords", M, "records")] += number
        flushed[(customer, "PutRecords", M, "requests")] += 1
    together = threading.Barrier(WRITERS + 1, timeout=20)
    expected = [Counter() for _ in range(WRITERS)]

    def writer(number: int):
        def write():
            rng = random.Random(100 + number)
            together.wait()
            for _ in range(ROUNDS):
                usage_decisions_add(rows=random_rows(rng, expected[number]))

        return write

    def flush():
        # The flush has claimed the minute and is about to add its rows when the writers start.
        usage_flush(
            store=store, now_ms=(M + 5) * MINUTE_MS, checkpoint=lambda step, m: step == "claimed" and together.wait()
        )

    assert run_threads([flush, *(writer(number) for number in range(WRITERS))]) == []

    assert +stored_totals() == +(flushed + sum(expected, Counter()))
    assert store.usage_minutes() == []


@pytest.mark.django_db(transaction=True)
def test_a_write_committed_while_a_rollup_runs_is_rolled_up_by_the_next_run(monkeypatch) -> None:
    usage_decisions_add(rows=[DecisionCounts("acct-1", "PutRecords", M, allowed=2, degraded=2)])
    marks_delete = rollup_module._marks_delete

    def write_then_delete(read):
        # After the rollup recomputed the hour, before it deletes the marks it read: another process writes.
        assert (
            run_threads([lambda: usage_decisions_add(rows=[DecisionCounts("acct-1", "PutRecords", M, denied=5)])]) == []
        )
        marks_delete(read)

    monkeypatch.setattr(rollup_module, "_marks_delete", write_then_delete)
    first = usage_rollup()
    monkeypatch.setattr(rollup_module, "_marks_delete", marks_delete)

    assert (first.marked, first.pending) == (1, 1)
    assert UsageHour.objects.values_list("allowed", "denied").get() == (2, 0), "the late write was not seen"
    assert RollupMark.objects.get(minute=M).version == 2, "so its mark stays"

    second = usage_rollup()

    assert (second.marked, second.pending) == (1, 0)
    assert UsageHour.objects.values_list("allowed", "denied", "degraded").get() == (2, 5, 2)
    assert UsageDay.objects.values_list("allowed", "denied", "degraded").get() == (2, 5, 2)
    assert not RollupMark.objects.exists()
