"""An audited hybrid limit on the real exchange: hybrid_sync.lua (RedisPeers) writes a `sync` entry in the same
call as each exchange, in the stream of the counter's slot; they drain into DecisionEvent and audit clean, with
the windows' totals the counters admitted."""

from __future__ import annotations

import datetime as dt
import random
import time

import pytest
from quota_client.hybrid import HybridConfig, HybridCounter, fixed_windows

from apps.engine import CheckItem, KeyLayout, LimitSpec, ManualClock
from apps.engine.decision_log import log_key_of, parse_entry
from apps.engine.hybrid_peers import RedisPeers, SyncLog, hybrid_key
from apps.quality.models import DecisionEvent
from apps.quality.selectors import EPOCH
from apps.quality.services.audits import audit_quality_run, log_filters
from apps.quality.services.drain import stream_entries
from tests.quality.logs import drain

pytestmark = pytest.mark.django_db(transaction=True)
WINDOW, SYNC_MS, LIMIT = 10_000, 500, 60
SPEC = LimitSpec(name="hot", algorithm="fixed_window", quantity=LIMIT, period_s=10, key_by=("customer",), audit=True)


def counters(redis_client, prefix: str, clock: ManualClock) -> tuple[list[HybridCounter], str]:  # type: ignore[no-untyped-def]
    counter_key = KeyLayout(prefix).counter_keys(SPEC, CheckItem(customer="acme", operation="Put", costs={}))[0]
    peers = RedisPeers(redis_client, retention_ms=3 * WINDOW, clock=clock)
    log = SyncLog.of(SPEC, counter_key, prefix=prefix, customer="acme", operation="Put", sync_ms=SYNC_MS, cap=10_000)
    config = HybridConfig(limit=LIMIT, sync_ms=SYNC_MS)
    exchange = lambda name: peers.exchange_for(hybrid_key(counter_key, prefix), name, log)  # noqa: E731
    group = [HybridCounter(config, fixed_windows(WINDOW), exchange(f"w{n}"), clock.now_ms) for n in range(3)]
    return group, counter_key


def advance(clock: ManualClock, gap: int, group: list[HybridCounter]) -> None:
    """Move the clock by `gap`, firing each counter's timer when its exchange is due (the API workers' thread)."""
    target = clock.now_ms() + gap
    while True:
        for counter in group:
            counter.sync_if_due()
        if clock.now_ms() >= target:
            return
        clock.advance(max(1, min(target, *(counter.next_sync_at for counter in group)) - clock.now_ms()))


def test_the_exchanges_of_an_audited_hybrid_limit_drain_and_audit_clean(redis_client, key_prefix) -> None:
    start = (int(time.time() * 1000) // WINDOW - 60) * WINDOW  # ten minutes ago, on a window's start
    clock = ManualClock(start_ms=start)
    group, counter_key = counters(redis_client, key_prefix, clock)
    rng = random.Random(17)
    admitted: dict[int, int] = {}
    for _ in range(1_500):  # about 2x the limit offered over four windows, on three instances
        advance(clock, rng.randint(0, 50), group)
        if rng.choice(group).try_acquire():
            window = clock.now_ms() - clock.now_ms() % WINDOW
            admitted[window] = admitted.get(window, 0) + 1
    advance(clock, WINDOW, group)  # every instance reports its final counts

    stream = log_key_of(key_prefix, counter_key)
    entry_id, fields = next(stream_entries(redis_client, stream))
    first = parse_entry(entry_id, fields)
    assert (first.kind, first.mode, first.key, first.limit, first.customer, first.operation) == (
        "sync", "hybrid", counter_key, "hot", "acme", "Put"
    )  # fmt: skip
    assert (first.quantity, first.period_ms, first.sync_ms, first.window_ms, first.at_ms) == (
        LIMIT, WINDOW, SYNC_MS, start, start
    )  # fmt: skip
    assert max(admitted.values()) > LIMIT  # the bound is exercised: windows over the limit, within the bound

    report = drain(redis_client, key_prefix)
    at = EPOCH + dt.timedelta(milliseconds=start)
    outcome = audit_quality_run(filters=log_filters(start=at, end=at + dt.timedelta(hours=1)))

    assert report.inserted == DecisionEvent.objects.filter(kind="sync").count() == sum(c.exchanges for c in group)
    assert outcome.report.violations == []
    (limit,) = outcome.run.report["limits"]
    assert (limit["mode"], limit["key"], limit["admitted_cost"]) == ("hybrid", counter_key, sum(admitted.values()))
    assert limit["windows"] == len(admitted) + 1  # and the window the final reports were made in
    assert outcome.report.unchecked == {"hybrid windows unfinished": 1}


def test_a_limit_without_audit_logs_no_exchange(redis_client, key_prefix) -> None:
    clock = ManualClock(start_ms=1_700_000_000_000)
    peers = RedisPeers(redis_client, retention_ms=3 * WINDOW, clock=clock)
    counter = HybridCounter(HybridConfig(limit=5, sync_ms=SYNC_MS), fixed_windows(WINDOW),
                            peers.exchange_for(f"{key_prefix}:h:{{c=acme}}:hot", "w0"), clock.now_ms)  # fmt: skip

    assert counter.try_acquire()
    assert peers.calls == 1
    assert list(redis_client.scan_iter(match=f"{key_prefix}:dlog:*")) == []
