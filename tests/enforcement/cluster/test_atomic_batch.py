"""POST /api/v1/check/batch with `mode: atomic` over two customers whose counters live on different cluster slots
(store/atomic_slots.py), through two real platform processes: all or nothing, decided by Redis (never degraded),
a refused batch consuming nothing on the other customer's slot, and usage tallied for what was admitted only."""

from __future__ import annotations

import uuid

import pytest
from redis.crc import key_slot

from apps.engine.keys import enc
from apps.usage.models import CounterRecord
from tests.enforcement.cluster.conftest import LIMIT_ATOMIC, Answer, check
from tests.usage.written import usage_written

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
BATCH = "/api/v1/check/batch"


def customers_on_two_slots() -> tuple[str, str]:
    run = uuid.uuid4().hex[:10]
    first = f"atomic-{run}-0"
    for n in range(1, 100):
        other = f"atomic-{run}-{n}"
        if key_slot(f"{{c={enc(other)}}}".encode()) != key_slot(f"{{c={enc(first)}}}".encode()):
            return first, other
    raise AssertionError("no two customers on different slots")


def batch(platform, customers: tuple[str, ...], url: int = 0) -> Answer:  # type: ignore[no-untyped-def]
    body = {"mode": "atomic", "items": [{"customer": c, "operation": "Atomic"} for c in customers]}
    return check(platform.urls[url], platform.service_key, body, path=BATCH)


def remaining(platform, customer: str) -> int:  # type: ignore[no-untyped-def]
    probe = check(
        platform.urls[1], platform.service_key, {"customer": customer, "operation": "Atomic", "dry_run": True}
    )
    return int(probe.body["limits"][0]["remaining"])


def records(customer: str) -> int:
    """What the durable counter of `customer` was recorded to spend (the records a lost counter is rebuilt from)."""
    return sum(record.amount for record in CounterRecord.objects.filter(counter__contains=f"{{c={customer}}}"))


def test_an_atomic_batch_over_two_slots_is_refused_whole_when_one_customer_is_over(cluster_platform) -> None:
    full, other = customers_on_two_slots()
    spent = [check(cluster_platform.urls[0], cluster_platform.service_key, {"customer": full, "operation": "Atomic"})
             for _ in range(LIMIT_ATOMIC)]  # fmt: skip
    assert [answer.status for answer in spent] == [200] * LIMIT_ATOMIC

    refused = batch(cluster_platform, (other, full))

    assert refused.status == 200
    assert (refused.body["allowed_count"], refused.body["denied_count"]) == (0, 2)
    results = refused.body["results"]
    assert [result["code"] for result in results] == ["BATCH_REJECTED", "OVER_LIMIT"]
    assert [result["degraded"] for result in results] == [False, False]
    assert [result["allowed"] for result in results] == [False, False]
    assert results[1]["retry_after_ms"] > 0
    # The other customer's slot reserved (it comes first or not, by slot) and was given back.
    assert remaining(cluster_platform, other) == LIMIT_ATOMIC
    assert remaining(cluster_platform, full) == 0
    want = {"allowed": 0, "denied": 1, "logged": 1}
    assert usage_written(want, customer=other, operation="Atomic") == want
    assert (records(other), records(full)) == (0, LIMIT_ATOMIC)  # written with the usage, same ledger round


def test_an_atomic_batch_over_two_slots_spends_on_both_when_both_are_under(cluster_platform) -> None:
    first, second = customers_on_two_slots()

    admitted = [batch(cluster_platform, (first, second), url=n % 2) for n in range(LIMIT_ATOMIC)]
    refused = batch(cluster_platform, (second, first))

    assert [answer.body["allowed_count"] for answer in admitted] == [2] * LIMIT_ATOMIC
    assert all(result["degraded"] is False for answer in admitted for result in answer.body["results"])
    assert [result["code"] for result in refused.body["results"]] == ["OVER_LIMIT", "OVER_LIMIT"]
    assert remaining(cluster_platform, first) == remaining(cluster_platform, second) == 0
    for customer in (first, second):
        want = {"allowed": LIMIT_ATOMIC, "denied": 1, "logged": LIMIT_ATOMIC + 1}
        assert usage_written(want, customer=customer, operation="Atomic") == want
        assert records(customer) == LIMIT_ATOMIC
