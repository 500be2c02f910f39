"""check.lua's KEYS and ARGV (apps/engine/store/script/args.py): a known check's exact arguments, and batches read
back by the names check.lua reads them by (check_fields.py, recorded_call.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from apps.engine import CheckItem, KeyLayout, LimitSpec
from apps.engine.store.plan import ItemPlan, plan_item
from apps.engine.store.script.args import ALGORITHM_NUMBERS, encode
from apps.engine.store.script.check_fields import NOT_DURABLE, REBUILT, RECORDED
from apps.engine.store.script.recorded_call import numbers_of, read_call

LAYOUT = KeyLayout("t")
NOW = 1_705_320_000_000  # 2024-01-15T12:00:00Z
EPOCH = "t:epoch"
WARM = "t:warm"
MINUTE = LimitSpec("per-minute", "fixed_window", 10, period_s=60, key_by=("customer",))
LOG = LimitSpec("log", "sliding_log", 5, period_s=10, key_by=("customer",), shadow=True)
DAILY = LimitSpec("daily", "calendar", 100, calendar_period="day", key_by=("customer",), durable=True)
BYTES = LimitSpec("bytes", "token_bucket", 1000, period_s=1, burst=4000, unit="bytes")
SLOTS = LimitSpec("slots", "concurrency", 2, key_by=("customer",))


@dataclass
class Definition:
    algorithm: int
    keys: list[str]
    constants: tuple[int, int, int, int]  # quantity, period ms, capacity, shadow
    durability: tuple[int, str | None]  # durability, seed (the rebuilt state) or None
    bounds: list[int]


@dataclass
class Item:
    usage: str
    lease: tuple[str, int] | None
    descriptor: str | None
    idempotency_key: str | None
    dry_run: bool
    costs: list[tuple[str, int]]
    limits: list[tuple[int, int]]  # definition number, cost
    max_wait_ms: int = 0


def read(keys: list[str], argv: list[Any]) -> tuple[list[Definition], list[Item]]:
    """The definitions and items of a call, read by the names check.lua reads them by (recorded_call.py)."""
    assert argv[1] in ("a", "i")
    call = read_call(keys, argv)
    definitions = [
        Definition(
            d.fields.algorithm,
            d.keys,
            (d.fields.quantity, d.fields.period_ms, d.fields.capacity, d.fields.shadow),
            (d.fields.durability, d.seed),
            d.bounds,
        )
        for d in call.definitions
    ]
    items = [
        Item(
            i.usage,
            (i.lease, i.fields.lease_ttl_ms) if i.lease is not None else None,
            i.descriptor,
            i.idempotency_key,
            i.fields.dry_run == 1,
            i.units,
            [(limit.definition, limit.cost) for limit in i.limits],
            i.fields.max_wait_ms,
        )
        for i in call.items
    ]
    return definitions, items


def plan(item: CheckItem, *limits: LimitSpec, lease_ms: int | None = None) -> ItemPlan:
    return plan_item(LAYOUT, item, limits, NOW, lease_ms)


def test_a_one_limit_check_encodes_to_known_arguments() -> None:
    item = CheckItem("acct-1", "Op")
    keys, argv, described = encode([plan(item, MINUTE)], False, "", "t:ui:")

    assert keys == ["t:c:{c=acct-1}:fw:per-minute:c=acct-1"]
    definition = [ALGORITHM_NUMBERS["fixed_window"], 1, 10, 60_000, 10, 0, NOT_DURABLE, 0, 0]
    # the item: usage base ARGV[5], no lease/descriptor/request id, not a dry run, no ttl, no wait;
    # 1 unit: "requests" (ARGV[6]) x 1; 1 limit: definition 1 x 1
    numbers = [1, 1, *definition, 5, 0, 0, 0, 0, 0, 0, 1, 6, 1, 1, 1, 1]
    assert argv == ["", "i", "t:ui:", repr(numbers), "t:u:{c=acct-1}:Op:", "requests"]
    assert argv[3] == "[1, 1, 1, 1, 10, 60000, 10, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 1, 6, 1, 1, 1, 1]"
    assert [(limit.spec, checked) for limit, checked in described] == [(MINUTE, item)]


def test_a_batch_reads_back_as_its_plans_with_shared_counters_defined_once() -> None:
    first = CheckItem("acct-1", "Op", costs={"bytes": 300}, request_id="r-1")
    dry = CheckItem("acct-1", "Op", request_id="r-2", dry_run=True)
    other = CheckItem("acct-2", "Other", costs={"bytes": 5, "records": 2})
    plans = [plan(first, MINUTE, LOG, BYTES), plan(dry, MINUTE, DAILY), plan(other, LOG, BYTES)]
    keys, argv, described = encode(plans, True, NOW, "t:ui:")
    definitions, items = read(keys, argv)

    assert argv[:3] == [NOW, "a", "t:ui:"]
    assert len(keys) == len(set(keys))
    assert [(limit.spec, item.customer) for limit, item in described] == [
        (MINUTE, "acct-1"),
        (LOG, "acct-1"),
        (BYTES, "acct-1"),
        (DAILY, "acct-1"),
        (LOG, "acct-2"),
    ]
    for definition, (limit, item) in zip(definitions, described, strict=True):
        spec = limit.spec
        assert definition.algorithm == ALGORITHM_NUMBERS[spec.algorithm]
        assert definition.keys == list(LAYOUT.counter_keys(spec, item))
        assert definition.constants == (spec.quantity, spec.period_ms, spec.capacity, int(spec.shadow))
        # no epoch key (no seeder): a durable counter is recorded, never rebuilt
        assert definition.durability == ((RECORDED if spec.durable else NOT_DURABLE), None)
    assert definitions[3].bounds == list(plans[1].limits[1].bounds)
    assert NOW - 12 * 3_600_000 in definitions[3].bounds  # the calendar day's windows
    assert [item.limits for item in items] == [[(1, 1), (2, 1), (3, 300)], [(1, 1), (4, 1)], [(5, 1), (3, 5)]]
    assert [item.costs for item in items] == [
        [("bytes", 300), ("requests", 1)],
        [("requests", 1)],
        [("bytes", 5), ("records", 2), ("requests", 1)],
    ]
    assert [item.usage for item in items] == [LAYOUT.usage_base(p.item) for p in plans]
    # a dry run sends its request id too: the script compares it with a stored decision, never stores it
    assert [item.idempotency_key for item in items] == ["t:i:{c=acct-1}:r-1", "t:i:{c=acct-1}:r-2", None]
    assert [item.dry_run for item in items] == [False, True, False]
    assert [item.max_wait_ms for item in items] == [0, 0, 0]
    descriptor = items[0].descriptor or ""
    lease_id, described, fingerprint = descriptor.split("|")
    assert (lease_id, fingerprint) == ("", plans[0].fingerprint)
    assert json.loads(described)[2] == ["bytes", "token_bucket", "bytes", 1000, False]
    assert (items[1].descriptor or "").endswith("|" + plans[1].fingerprint)
    assert items[2].descriptor is None


def test_a_lease_sends_its_payload_ttl_and_lease_id() -> None:
    leased = plan(CheckItem("acct-1", "Op", request_id="r"), SLOTS, MINUTE, lease_ms=30_000)
    keys, argv, _ = encode([leased], False, "", "t:ui:")
    [item] = read(keys, argv)[1]

    assert leased.lease is not None
    assert item.lease == (leased.lease_payload(), leased.lease[1])  # the member first (concurrency.lua)
    assert item.lease[0].split("\n")[:3] == [leased.lease[0], leased.lease_record_key, "t:u:{c=acct-1}:Op:"]
    assert (item.descriptor or "").startswith(f"{leased.lease_id}|")
    assert keys[0] == "t:i:{c=acct-1}:r"  # the idempotency key comes before the item's counters


def test_durable_counters_are_recorded_asked_for_once_given_a_seeder_and_send_the_warm_mark_and_epoch_last() -> None:
    plans = [plan(CheckItem("acct-1", "Op"), MINUTE, DAILY)]

    keys, argv, _ = encode(plans, False, "", "t:ui:")
    assert EPOCH not in keys  # no seeder: recorded, never rebuilt
    assert read(keys, argv)[0][1].durability == (RECORDED, None)
    keys, argv, _ = encode(plans, False, "", "t:ui:", EPOCH, warm_key=WARM)
    assert keys[-2:] == [WARM, EPOCH]
    assert [d.durability for d in read(keys, argv)[0]] == [(NOT_DURABLE, None), (REBUILT, None)]
    keys, argv, _ = encode(plans, False, "", "t:ui:", EPOCH, {2: "3600000|1705276800000:42"}, warm_key=WARM)
    assert [d.durability for d in read(keys, argv)[0]] == [(NOT_DURABLE, None), (REBUILT, "3600000|1705276800000:42")]
    keys, _, _ = encode([plan(CheckItem("acct-1", "Op"), MINUTE)], False, "", "t:ui:", EPOCH, warm_key=WARM)
    assert EPOCH not in keys  # nothing durable was sent
    assert WARM not in keys
    with pytest.raises(ValueError, match="warm mark"):
        encode(plans, False, "", "t:ui:", EPOCH)  # a mark the script would read as another key


def test_the_log_section_follows_the_items_and_names_each_audited_limit_or_lease() -> None:
    from apps.engine.decision_log import LogSettings

    audited = LimitSpec("audited", "token_bucket", 5, period_s=10, burst=8, key_by=("ip",), audit=True)
    plans = [
        plan_item(LAYOUT, CheckItem("acme", "Put", ip="10.0.0.1"), [MINUTE, audited], NOW),
        plan_item(LAYOUT, CheckItem("acme", "Put", ip="10.0.0.1", dry_run=True), [audited], NOW),  # not logged
        plan_item(LAYOUT, CheckItem("acme", "Put"), [SLOTS], NOW, lease_ms=5_000),  # a lease, not audited
    ]
    keys, argv, _ = encode(plans, False, NOW, "t:ui:", log=LogSettings("t", "node-7", 123))
    plain_keys, plain_argv, _ = encode(plans, False, NOW, "t:ui:")
    numbers = numbers_of(argv[3])
    plain = numbers_of(plain_argv[3])
    assert numbers[: len(plain)] == plain  # the items as before, the log section after them
    section = [int(n) for n in numbers[len(plain) :]]
    assert section[0] == 2
    (item_a, position_a, stream_a, label_a, audit_a), (item_b, position_b, stream_b, label_b, audit_b) = (
        section[1:6],
        section[6:11],
    )
    assert (item_a, position_a, audit_a, item_b, position_b, audit_b) == (1, 2, 1, 3, 1, 0)
    assert keys[stream_a - 1] == "t:dlog:{i=10.0.0.1}"
    assert keys[stream_b - 1] == "t:dlog:{c=acme}"
    assert argv[label_a - 1 : label_a + 7] == ["acme", "Put", "audited", "token_bucket", "5", "10000", "8", "0"]
    assert argv[label_b - 1 : label_b + 7] == ["acme", "Put", "slots", "concurrency", "2", "0", "0", "0"]
    assert (argv[section[11] - 1], section[12]) == ("node-7", 123)
    assert keys[: len(plain_keys)] == plain_keys


def test_an_item_sends_how_long_it_accepts_to_wait_on_a_shaper() -> None:
    shaper = LimitSpec("shaped", "leaky_bucket", 10, period_s=1, key_by=("customer",))
    keys, argv, _ = encode([plan(CheckItem("acct-1", "Op", max_wait_ms=2_500), shaper)], False, "", "t:ui:")

    assert [item.max_wait_ms for item in read(keys, argv)[1]] == [2_500]
