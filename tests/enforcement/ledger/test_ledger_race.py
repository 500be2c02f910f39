"""Many threads tallying while the ledger's rounds run: every decision is written exactly once."""

from __future__ import annotations

import threading

import pytest
from django.db.models import Sum

from apps.enforcement.ledger.pending import DecisionLedger
from apps.enforcement.ledger.tally import decision_tally
from apps.engine import CheckItem, Decision, LimitResult, LimitSpec
from apps.usage.models import CounterRecord, UsageMinute

pytestmark = pytest.mark.django_db(transaction=True)
THREADS = 8
PER_THREAD = 2_000
AT = 1_767_225_600_000
BURST = LimitSpec("burst", "token_bucket", 10, period_s=60, key_by=("customer",), durable=True)


def test_threads_tallying_while_rounds_write_lose_nothing_and_double_nothing() -> None:
    ledger = DecisionLedger()  # its own: no thread of its own, the rounds below are the flusher
    started, done = threading.Barrier(THREADS + 1), threading.Event()
    rounds: list[int] = []

    def tally(number: int) -> None:
        started.wait()
        for n in range(PER_THREAD):
            allowed = n % 3 != 0
            at = AT + (n % 4) * 60_000  # four minutes, so rows are written into again and again
            result = LimitResult("burst", "token_bucket", "requests", 10, 0, 0, False, not allowed)
            item = CheckItem(f"acct-{number % 3}", "Put", costs={"records": 2})
            decision_tally(item, [BURST], Decision(allowed, 0 if allowed else 5, (result,), decided_at_ms=at), ledger)

    def flusher() -> None:
        started.wait()
        while not done.is_set():
            rounds.append(ledger.flush())

    threads = [threading.Thread(target=tally, args=(number,)) for number in range(THREADS)]
    writer = threading.Thread(target=flusher)
    for thread in [*threads, writer]:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    writer.join()
    rounds.append(ledger.flush())  # what the last round left

    decisions = THREADS * PER_THREAD
    allowed = THREADS * sum(1 for n in range(PER_THREAD) if n % 3 != 0)
    totals = UsageMinute.objects.aggregate(allowed=Sum("allowed"), denied=Sum("denied"))
    assert totals == {"allowed": allowed, "denied": decisions - allowed}
    assert sum(rounds) == decisions
    assert len([r for r in rounds if r]) > 2, "the rounds ran while the threads tallied"
    assert sum(row.costs["records"] for row in UsageMinute.objects.all()) == 2 * allowed
    assert CounterRecord.objects.aggregate(total=Sum("amount"))["total"] == allowed
    assert ledger.pending_rows() == []
