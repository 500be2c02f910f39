"""Many threads tallying while the ledger's rounds run: every decision is written exactly once."""

from __future__ import annotations

import threading

import pytest
from django.db import connections
from django.db.models import Sum

from apps.enforcement.ledger.pending import DecisionLedger
from apps.enforcement.ledger.tally import decision_tally
from apps.engine import CheckItem, Decision, LimitResult, LimitSpec
from apps.usage.models import CounterRecord, UsageMinute

pytestmark = pytest.mark.django_db(transaction=True)
THREADS = 8
AT = 1_767_225_600_000
ROUNDS_WHILE_TALLYING = 3
BURST = LimitSpec("burst", "token_bucket", 10, period_s=60, key_by=("customer",), durable=True)


def test_threads_tallying_while_rounds_write_lose_nothing_and_double_nothing() -> None:
    ledger = DecisionLedger()  # its own: no thread of its own, the flusher below makes the rounds
    started, enough = threading.Barrier(THREADS + 1), threading.Event()
    made = [[0, 0] for _ in range(THREADS)]  # per thread: admitted, refused
    rounds: list[int] = []

    def tally(number: int) -> None:
        started.wait()
        n = 0
        while not enough.is_set():  # until the flusher wrote several rounds while this thread tallied
            allowed = n % 3 != 0
            at = AT + (n % 4) * 60_000  # four minutes, so rows are written into again and again
            result = LimitResult("burst", "token_bucket", "requests", 10, 0, 0, False, not allowed)
            item = CheckItem(f"acct-{number % 3}", "Put", costs={"records": 2})
            decision_tally(item, [BURST], Decision(allowed, 0 if allowed else 5, (result,), decided_at_ms=at), ledger)
            made[number][0 if allowed else 1] += 1
            n += 1

    def flusher() -> None:
        started.wait()
        try:
            while len([written for written in rounds if written]) < ROUNDS_WHILE_TALLYING:
                rounds.append(ledger.flush())
        finally:
            enough.set()
            connections.close_all()

    threads = [threading.Thread(target=tally, args=(number,)) for number in range(THREADS)]
    writer = threading.Thread(target=flusher)
    for thread in [*threads, writer]:
        thread.start()
    for thread in [*threads, writer]:
        thread.join()
    rounds.append(ledger.flush())  # what came after the flusher's last round

    allowed, denied = sum(m[0] for m in made), sum(m[1] for m in made)
    totals = UsageMinute.objects.aggregate(allowed=Sum("allowed"), denied=Sum("denied"))
    assert totals == {"allowed": allowed, "denied": denied}
    assert sum(rounds) == allowed + denied
    assert sum(row.costs["records"] for row in UsageMinute.objects.all()) == 2 * allowed
    assert CounterRecord.objects.aggregate(total=Sum("amount"))["total"] == allowed
    assert ledger.pending_rows() == []
