"""A check.lua call read back by name (store/script/recorded_call.py): what args.py encodes for a batch of several
limits comes back field by field, from the arguments a test holds and from a real MONITOR capture."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable

import redis

from apps.engine import CheckItem, KeyLayout, LimitSpec, ManualClock
from apps.engine.decision_log import LogSettings, log_key_of
from apps.engine.store.plan import ItemPlan, plan_item
from apps.engine.store.redis import RedisStore
from apps.engine.store.script.args import encode, item_descriptor
from apps.engine.store.script.check_fields import NOT_DURABLE, REBUILT
from apps.engine.store.script.recorded_call import command_of, describe, keys_and_argv, numbers_of, read_call

LAYOUT = KeyLayout("t")
NOW = 1_705_320_000_000  # 2024-01-15T12:00:00Z
MINUTE = LimitSpec("per-minute", "fixed_window", 10, period_s=60, key_by=("customer",))
LOG = LimitSpec("log", "sliding_log", 5, period_s=10, key_by=("customer",), shadow=True, audit=True)
DAILY = LimitSpec("daily", "calendar", 100, calendar_period="day", key_by=("customer",), durable=True)
BYTES = LimitSpec("bytes", "token_bucket", 1000, period_s=1, burst=4000, unit="bytes", audit=True)
SLOTS = LimitSpec("slots", "concurrency", 2, key_by=("customer",))


def batch() -> list[ItemPlan]:
    """Four checks naming five limits: units, request ids, a dry run, a lease, audited limits, a durable calendar."""
    return [
        plan_item(
            LAYOUT, CheckItem("acct-1", "Put", costs={"bytes": 300}, request_id="r-1"), [MINUTE, LOG, BYTES], NOW
        ),
        plan_item(LAYOUT, CheckItem("acct-1", "Put", request_id="r-2", dry_run=True), [MINUTE, DAILY], NOW),
        plan_item(LAYOUT, CheckItem("acct-2", "Get", max_wait_ms=250), [LOG, BYTES, DAILY], NOW),
        plan_item(LAYOUT, CheckItem("acct-2", "Hold"), [SLOTS, MINUTE], NOW, 30_000),
    ]


def test_a_batch_of_several_limits_reads_back_field_by_field() -> None:
    plans = batch()
    seed = "86400000|1705276800000:7"
    keys, argv, described = encode(
        plans, True, NOW, "t:ui:", "t:epoch", {4: seed}, LogSettings("t", "node-1", 500), "t:warm"
    )
    call = read_call(keys, argv)

    assert (call.now, call.mode, call.index_base) == (str(NOW), "a", "t:ui:")
    assert len(call.definitions) == len(described) == 8  # per customer, but one global bytes bucket
    for definition, (limit, _) in zip(call.definitions, described, strict=True):
        spec, fields = limit.spec, definition.fields
        assert (definition.algorithm, definition.keys) == (spec.algorithm, list(limit.keys))
        assert (fields.quantity, fields.period_ms, fields.capacity) == (spec.quantity, spec.period_ms, spec.capacity)
        assert fields.shadow == int(spec.shadow)
        # A lease set is rebuilt too (its allocations), by a store that rebuilds: this call sends the epoch key.
        rebuilt = spec.durable or spec.entry.lease_set is not None
        assert fields.durability == (REBUILT if rebuilt else NOT_DURABLE)
        assert definition.bounds == list(limit.bounds)
    assert [d.seed for d in call.definitions] == [None, None, None, seed, None, None, None, None]
    for item, plan in zip(call.items, plans, strict=True):
        assert item.usage == plan.usage_base
        assert item.idempotency_key == plan.idem_key
        assert item.descriptor == (item_descriptor(plan) if plan.idem_key else None)
        assert item.lease == (plan.lease_payload() if plan.lease else None)
        assert item.fields.lease_ttl_ms == (plan.lease[1] if plan.lease else 0)
        assert (item.fields.dry_run, item.fields.max_wait_ms) == (int(plan.item.dry_run), plan.item.max_wait_ms)
        assert item.units == list(plan.costs)
        named = [(described[n.definition - 1][0].spec, n.cost) for n in item.limits]
        assert named == [(limit.spec, limit.cost) for limit in plan.limits]
    assert call.log is not None
    assert call.tail is not None
    # audited limits of items that are not dry runs, and the lease of item 4 (its first limit)
    logged = [(entry.fields.item, entry.fields.position, entry.label.limit) for entry in call.log]
    assert logged == [(1, 2, "log"), (1, 3, "bytes"), (3, 1, "log"), (3, 2, "bytes"), (4, 1, "slots")]
    entry = call.log[1]
    assert entry.stream == log_key_of("t", plans[0].limits[2].keys[0])
    assert tuple(entry.label) == ("acct-1", "Put", "bytes", "token_bucket", "1000", "1000", "4000", "0")
    assert (call.instance, call.tail.maxlen, call.unnamed) == ("node-1", 500, [])


def test_the_description_names_every_field() -> None:
    keys, argv, _ = encode(batch(), False, "", "t:ui:", log=LogSettings("t", "node-1", 500))
    text = "\n".join(describe(read_call(keys, argv)))

    assert "now: '' (Redis TIME)   mode: i (independent)" in text
    assert "definition 2: sliding_log t:c:{c=acct-1}:sl:log:c=acct-1 t:c:{c=acct-1}:sl.s:log:c=acct-1\n" in text
    assert "algorithm=4 key=3 quantity=5 period_ms=10000 capacity=5 shadow=1 durability=0 seed=0 bound_count=0" in text
    assert "usage=5 lease=0 descriptor=6 idempotency=1 dry_run=0 lease_ttl_ms=0 max_wait_ms=0 unit_count=2" in text
    assert "units: bytes x 300, requests x 1" in text
    assert "label: customer=acct-2 operation=Get limit=bytes algorithm=token_bucket" in text
    assert "log: 5 entries, instance=53 maxlen=500, instance 'node-1'" in text


def test_the_numbers_sent_before_as_packed_doubles_still_read() -> None:
    keys, argv, _ = encode(batch(), False, "", "t:ui:")
    numbers = numbers_of(argv[3])
    packed = struct.pack(f"<{len(numbers)}d", *numbers)

    assert read_call(keys, [*argv[:3], packed, *argv[4:]]) == read_call(keys, argv)


def test_a_call_captured_by_monitor_reads_back(redis_client: redis.Redis, key_prefix: str) -> None:
    store = RedisStore(redis_client, key_prefix, clock=ManualClock(NOW))
    pairs = [(CheckItem("acct-é", "Put", costs={"bytes": 3}), [MINUTE, BYTES]), (CheckItem("acct-2", "Put"), [LOG])]
    lines = monitored(redis_client, lambda: store.check_batch(pairs))
    calls = [keys_and_argv(command_of(line)) for line in lines if '"EVALSHA"' in line and key_prefix in line]
    plans = [plan_item(KeyLayout(key_prefix), item, limits, NOW) for item, limits in pairs]

    (keys, argv) = calls[-1]
    call = read_call(keys, argv)
    assert [d.keys for d in call.definitions] == [list(limit.keys) for plan in plans for limit in plan.limits]
    assert [item.usage for item in call.items] == [plan.usage_base for plan in plans]
    assert call.items[0].units == [("bytes", 3), ("requests", 1)]
    assert len(call.unnamed) == 1  # the deadline the store appends (deadline.py)


def monitored(client: redis.Redis, action: Callable[[], object]) -> list[str]:
    """The raw MONITOR lines Redis sends while `action` runs (Redis's own quoting, not redis-py's parse)."""
    kwargs = client.connection_pool.connection_kwargs
    with socket.create_connection((kwargs.get("host", "localhost"), kwargs.get("port", 6379)), timeout=5) as sock:
        sock.sendall(b"MONITOR\r\n")
        received = bytearray(sock.recv(5))  # +OK\r\n
        action()
        client.echo("monitored: done")  # the last line to wait for
        deadline = time.monotonic() + 5
        while b"monitored: done" not in received and time.monotonic() < deadline:
            received.extend(sock.recv(65536))
    return [line[1:] for line in received.decode().split("\r\n") if line.startswith("+1")]
