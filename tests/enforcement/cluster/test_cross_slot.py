"""A check that spends a per-IP and a global limit beside a per-customer one lives on several cluster slots
(store/spread.py): it is decided by Redis, slot by slot, and a check refused by its customer's limit gives back
what it reserved on the other slots, so it consumes nothing anywhere; its usage is flushed once, with the
records of every durable counter it spent on."""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest

from apps.enforcement.decisions.specs import counter_reach_ms
from apps.usage.models import CounterRecord
from apps.usage.services import usage_flush
from tests.enforcement.cluster.conftest import LIMIT_SPREAD, check
from tests.usage.written import usage_written

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
CHECKS = 5


def remaining(answer) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {limit["name"]: limit["remaining"] for limit in answer.body["limits"]}


def test_a_check_over_three_slots_is_decided_by_redis_and_a_refused_one_consumes_nothing(
    cluster_platform, counters_store
) -> None:
    customer, ip = f"spread-{uuid.uuid4().hex[:10]}", f"198.51.100.{uuid.uuid4().int % 250 + 1}"
    body = {"customer": customer, "operation": "Spread", "ip": ip}

    answers = [check(cluster_platform.urls[n % 2], cluster_platform.service_key, body) for n in range(CHECKS)]

    assert [answer.status for answer in answers] == [200] * LIMIT_SPREAD + [429] * (CHECKS - LIMIT_SPREAD)
    assert all(answer.body["degraded"] is False for answer in answers)
    refused = answers[-1].body
    assert [limit["over"] for limit in refused["limits"]] == [True, False, False]
    # The refused checks reserved on the IP's and the global slot, then gave it back.
    probe = check(cluster_platform.urls[0], cluster_platform.service_key, {**body, "dry_run": True})
    assert remaining(probe)["spread-ip"] == 100 - LIMIT_SPREAD
    assert remaining(probe)["spread-global"] >= 1000 - LIMIT_SPREAD - 1  # refills meanwhile, never less

    # The servers' ledgers write the decisions' usage and records; the store holds none of it to flush.
    want = {"allowed": LIMIT_SPREAD, "denied": CHECKS - LIMIT_SPREAD}
    assert usage_written(want, customer=customer) == want
    assert (
        usage_flush(store=counters_store, now_ms=int(time.time() * 1000) + 3 * 60_000, reach=counter_reach_ms).rows == 0
    )
    spent: Counter[str] = Counter()
    for record in CounterRecord.objects.all():
        if customer in record.counter or ip in record.counter:
            spent[record.counter.split(":", 3)[2]] += record.amount
    assert spent == {"fw": LIMIT_SPREAD, "sl": LIMIT_SPREAD}  # the durable counters' records, refunds netted
