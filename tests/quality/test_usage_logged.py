"""UsageMinute.logged: the usage hash's `logged` (decisions the script wrote to the decision log) is flushed
into the minute's row and rolled up like session_ms, without making a row of its own."""

from __future__ import annotations

import time

import pytest

from apps.engine import ManualClock
from apps.engine.keys import KeyLayout
from apps.engine.store.redis import RedisStore
from apps.usage.models import UsageHour, UsageMinute
from apps.usage.services import usage_flush, usage_rollup
from tests.usage.factories import spend

pytestmark = pytest.mark.django_db(transaction=True)
MINUTE_MS = 60_000


def test_logged_is_flushed_into_the_minute_and_rolled_up(redis_client, key_prefix) -> None:
    minute = int(time.time() * 1000) // MINUTE_MS - 10
    store = RedisStore(redis_client, key_prefix=key_prefix, clock=ManualClock(start_ms=minute * MINUTE_MS))
    spend(store, customer="acme")
    spend(store, customer="acme")
    # What the check script adds for each decision entry it writes (apps/engine/decision_log.py).
    redis_client.hincrby(KeyLayout(key_prefix).usage_key("acme", "PutRecords", minute), "logged", 2)

    usage_flush(store=store)
    usage_rollup()

    row = UsageMinute.objects.get(customer="acme")
    assert (row.allowed, row.logged) == (2, 2)
    assert UsageHour.objects.get(customer="acme").logged == 2
