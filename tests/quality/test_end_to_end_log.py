"""The whole path through the real check script: audited decisions written to the streams in the same call,
drained, their usage flushed, the loss check finding nothing lost, then one entry lost to the stream's cap."""

from __future__ import annotations

import time

import pytest

from apps.enforcement.ledger.pending import decision_ledger
from apps.enforcement.ledger.tally import decision_tally
from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.decision_log import log_key
from apps.engine.store.redis import RedisStore
from apps.quality.models import DecisionEvent, LogCheck
from apps.quality.services.losses import log_losses_check
from apps.usage.models import UsageMinute
from apps.usage.services import usage_flush
from tests.quality.logs import drain

pytestmark = pytest.mark.django_db(transaction=True)
MINUTE_MS = 60_000
LIMIT = LimitSpec(name="per-minute", algorithm="fixed_window", quantity=3, period_s=60, key_by=("customer",),
                  audit=True)  # fmt: skip


def checks(store: RedisStore, count: int) -> list[bool]:
    item = CheckItem(customer="acme", operation="PutRecords", costs={})
    decisions = [store.check(item, [LIMIT]) for _ in range(count)]
    for decision in decisions:
        decision_tally(item, [LIMIT], decision)  # as the platform does with what the store answers
    return [decision.allowed for decision in decisions]


@pytest.fixture
def minute() -> int:
    return int(time.time() * 1000) // MINUTE_MS - 10


def test_every_audited_decision_is_drained_and_accounted_for(redis_client, key_prefix, minute) -> None:
    store = RedisStore(redis_client, key_prefix=key_prefix, clock=ManualClock(start_ms=minute * MINUTE_MS + 5))
    assert checks(store, 5) == [True, True, True, False, False]

    report = drain(redis_client, key_prefix)
    decision_ledger.flush()  # the decisions' usage and records: the ledger
    usage_flush(store=store)
    losses = log_losses_check(drained_at_ms=(minute + 5) * MINUTE_MS)

    assert report.inserted == 5
    assert sorted(DecisionEvent.objects.values_list("kind", flat=True)) == ["allow"] * 3 + ["deny"] * 2
    assert UsageMinute.objects.get(customer="acme").logged == 5
    assert (losses.minutes, losses.logged, losses.drained, losses.lost) == (1, 5, 5, 0)


def test_an_entry_the_cap_trimmed_before_the_drain_is_found(redis_client, key_prefix, minute) -> None:
    store = RedisStore(redis_client, key_prefix=key_prefix, clock=ManualClock(start_ms=minute * MINUTE_MS + 5))
    checks(store, 4)
    stream = log_key(key_prefix, "c=acme")
    assert redis_client.xlen(stream) == 4
    redis_client.xtrim(stream, maxlen=3, approximate=False)  # what MAXLEN does to a stream not drained in time

    drain(redis_client, key_prefix)
    decision_ledger.flush()  # the decisions' usage and records: the ledger
    usage_flush(store=store)
    losses = log_losses_check(drained_at_ms=(minute + 5) * MINUTE_MS)

    assert (losses.logged, losses.drained, losses.lost) == (4, 3, 1)
    assert LogCheck.objects.get(customer="acme").difference == 1
