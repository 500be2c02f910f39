"""Shaped check scripts (store/shaped.py, script/shapes.py, lua/shape.lua): a plain check is one call of its shape's
script, decided exactly as check.lua decides it; everything else still goes to check.lua."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.deadline import with_deadline
from apps.engine.durability import History
from apps.engine.registry import ALGORITHMS
from apps.engine.store.redis import RedisStore
from apps.engine.store.script.assembly import lua_file
from apps.engine.store.script.shapes import plain, shape_library, shape_of, shape_script
from apps.engine.types import SeedRequest
from tests.engine.conftest import START_MS
from tests.servers import RedisServer

PLAIN = sorted(name for name, entry in ALGORITHMS.items() if plain(entry))
ZONES = ["UTC", "Europe/Berlin", "America/New_York"]


def script_calls(client: redis.Redis) -> int:
    """Calls of scripts and of Redis Functions so far (a shape is a Function on one server, check.lua a script)."""
    stats = client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{command}", {}).get("calls", 0)) for command in ("evalsha", "eval", "fcall"))


def spec_of(
    algorithm: str, name: str, quantity: int, period_s: int, shadow: bool, key_by: tuple[str, ...]
) -> LimitSpec:
    entry = ALGORITHMS[algorithm]
    if entry.calendar_windows:
        return LimitSpec(name, algorithm, quantity, calendar_period="day", key_by=key_by, shadow=shadow)
    return LimitSpec(name, algorithm, quantity, period_s=period_s, key_by=key_by, shadow=shadow)


@st.composite
def plain_limits(draw: st.DrawFn) -> tuple[LimitSpec, ...]:
    count = draw(st.integers(1, 3))
    return tuple(
        spec_of(
            draw(st.sampled_from(PLAIN)),
            f"l{n}",
            draw(st.integers(1, 6)),
            draw(st.sampled_from([1, 2, 5, 60])),
            draw(st.booleans()),
            draw(st.sampled_from([("customer",), ("customer", "resource"), ("ip",), ()])),
        )
        for n in range(count)
    )


STEPS = st.lists(
    st.tuples(
        st.integers(0, 2_500),  # ms to advance first
        st.sampled_from(["a", "b"]),  # customer
        st.sampled_from([{}, {"requests": 2}, {"requests": 0}, {"records": 3}, {"requests": 1, "records": 7}]),
        st.sampled_from(ZONES),
    ),
    min_size=1,
    max_size=30,
)


def counter_states(client: redis.Redis, prefix: str) -> dict[str, bytes]:
    keys = sorted(client.scan_iter(match=f"{prefix}:c:*", count=1000))
    return {key.decode()[len(prefix) :]: client.get(key) for key in keys}


def paired_stores(client: redis.Redis, run: str) -> tuple[ManualClock, RedisStore, RedisStore]:
    """One clock (a calendar day ends within the run), a store that shapes and one that sends all to check.lua."""
    clock = ManualClock(START_MS + 86_400_000 - 3_000)
    return clock, RedisStore(client, f"{run}s", clock=clock), RedisStore(client, f"{run}g", clock=clock, shaped=False)


def item_of(customer: str, costs: dict[str, int], zone: str) -> CheckItem:
    return CheckItem(customer, "op", resource="r", ip="10.0.0.1", costs=costs, timezone=zone)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limits=plain_limits(), steps=STEPS)
def test_the_shaped_script_decides_and_writes_exactly_as_check_lua(
    redis_client: redis.Redis, key_prefix: str, limits: tuple[LimitSpec, ...], steps: list[Any]
) -> None:
    run = f"{key_prefix}:{abs(hash((limits, tuple(map(repr, steps)))))}"
    clock, shaped, general = paired_stores(redis_client, run)
    for advance, customer, costs, zone in steps:
        clock.advance(advance)
        item = item_of(customer, costs, zone)
        assert shaped.check(item, limits) == general.check(item, limits)
    assert counter_states(redis_client, f"{run}s") == counter_states(redis_client, f"{run}g")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limits=plain_limits(), batches=st.lists(STEPS, min_size=1, max_size=4))
def test_a_batch_of_one_shape_is_decided_and_written_exactly_as_check_lua_decides_it(
    redis_client: redis.Redis, key_prefix: str, limits: tuple[LimitSpec, ...], batches: list[Any]
) -> None:
    run = f"{key_prefix}:{abs(hash((limits, repr(batches))))}"
    clock, shaped, general = paired_stores(redis_client, run)
    for steps in batches:
        clock.advance(steps[0][0])
        # Items of one customer share its counters, in order.
        pairs = [(item_of(customer, costs, zone), limits) for _, customer, costs, zone in steps]
        assert shaped.check_batch(pairs) == general.check_batch(pairs)
    assert counter_states(redis_client, f"{run}s") == counter_states(redis_client, f"{run}g")


def test_a_batch_of_one_shape_is_one_call(redis_client: redis.Redis, key_prefix: str) -> None:
    store = RedisStore(redis_client, key_prefix, clock=ManualClock(START_MS))
    limits = (LimitSpec("w", "fixed_window", 50, period_s=60, key_by=("customer",)),)
    pairs = [(CheckItem(f"c{n % 7}", "op"), limits) for n in range(100)]
    store.check_batch(pairs[:1])  # loads the script
    before = script_calls(redis_client)
    decisions = store.check_batch(pairs)
    assert script_calls(redis_client) - before == 1
    assert sum(decision.allowed for decision in decisions) == 100
    assert decisions[-1].limits[0].remaining == 50 - 15  # c0's 15th check of the batch (and 1 before it)


def test_a_plain_check_is_one_call_of_its_shape(redis_client: redis.Redis, key_prefix: str) -> None:
    store = RedisStore(redis_client, key_prefix, clock=ManualClock(START_MS))
    limits = (
        LimitSpec("per-second", "fixed_window", 10, period_s=1, key_by=("customer",)),
        LimitSpec("bucket", "token_bucket", 10, period_s=10, key_by=("customer",)),
        LimitSpec("daily", "calendar", 100, calendar_period="day", key_by=("customer",)),
    )
    store.check(CheckItem("c", "op"), limits)  # loads the library (Function not found, FUNCTION LOAD, FCALL)
    before = script_calls(redis_client)
    for _ in range(5):
        assert store.check(CheckItem("c", "op"), limits).allowed
    assert script_calls(redis_client) - before == 5
    name, _ = shape_library(shape_of(limits, False))  # type: ignore[arg-type]
    assert redis_client.function_list(library=name)


def test_shape_scripts_carry_only_the_fragments_their_algorithms_need() -> None:
    window = LimitSpec("w", "fixed_window", 1, period_s=1)
    text = shape_script(shape_of([window], False)).text  # type: ignore[arg-type]
    assert "ALG.fw" in text
    others = [entry for name, entry in ALGORITHMS.items() if name != "fixed_window"]
    assert not any(f"ALG.{entry.code} =" in text for entry in others)
    assert "local function lookback" not in text  # nothing it counts is rebuilt


@pytest.mark.parametrize(
    ("limits", "item"),
    [
        ([LimitSpec("w", "fixed_window", 1, period_s=1, audit=True)], CheckItem("c", "op")),
        ([LimitSpec("w", "fixed_window", 1, period_s=1)], CheckItem("c", "op", request_id="r1")),
        ([LimitSpec("w", "fixed_window", 1, period_s=1)], CheckItem("c", "op", dry_run=True)),
        ([LimitSpec("s", "concurrency", 1)], CheckItem("c", "op")),
        ([LimitSpec("q", "leaky_bucket", 1, period_s=1)], CheckItem("c", "op", max_wait_ms=500)),
        ([LimitSpec("l", "sliding_log", 1, period_s=1)], CheckItem("c", "op")),
    ],
    ids=["audited", "request-id", "dry-run", "leased", "shaper", "second-key"],
)
def test_what_a_shape_cannot_hold_goes_to_check_lua(
    redis_client: redis.Redis, key_prefix: str, limits: Sequence[LimitSpec], item: CheckItem, monkeypatch
) -> None:
    store = RedisStore(redis_client, key_prefix, clock=ManualClock(START_MS))
    shaped_calls: list[object] = []
    call = store._shaped._call
    monkeypatch.setattr(store._shaped, "_call", lambda *args: shaped_calls.append(args) or call(*args))
    store.check(item, limits)
    assert shaped_calls == []


class Records:
    """A seeder over fixed records: 4 of the counter spent in the open window, asked how often."""

    def __init__(self) -> None:
        self.asked: list[SeedRequest] = []

    def __call__(self, requests: Sequence[SeedRequest]) -> list[History]:
        self.asked += requests
        return [[(START_MS, 4)] for _ in requests]


def test_a_missing_durable_counter_is_rebuilt_by_check_lua_until_redis_is_warm(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    records, clock = Records(), ManualClock(START_MS + 30_000)
    store = RedisStore(redis_client, key_prefix, clock=clock, seeder=records)
    daily = (LimitSpec("daily", "fixed_window", 5, period_s=86_400, key_by=("customer",), durable=True),)
    before = script_calls(redis_client)
    first = store.check(CheckItem("c", "op"), daily)
    # No epoch and no warm mark: the shaped script handed over, and check.lua rebuilt the counter from its records.
    assert first.allowed
    assert first.limits[0].remaining == 0
    assert len(records.asked) == 1
    assert script_calls(redis_client) - before >= 3  # shape (hand over), check.lua (needs seed), check.lua (seeded)

    redis_client.set(f"{key_prefix}:warm", "1")
    redis_client.delete(*redis_client.scan_iter(match=f"{key_prefix}:c:*"))
    before = script_calls(redis_client)
    again = store.check(CheckItem("c", "op"), daily)
    # Warm: a missing counter is a new one: one call, no seeder.
    assert again.allowed
    assert again.limits[0].remaining == 4
    assert len(records.asked) == 1
    assert script_calls(redis_client) - before == 1


def test_a_counter_whose_window_began_after_the_epoch_is_new_without_a_warm_mark(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    records, clock = Records(), ManualClock(START_MS + 30_000)
    store = RedisStore(redis_client, key_prefix, clock=clock, seeder=records)
    minute = (LimitSpec("minute", "fixed_window", 5, period_s=60, key_by=("customer",), durable=True),)
    store.check(CheckItem("c", "op"), minute)  # sets the epoch (30 s into the first window)
    clock.advance(60_000)  # the next window began after the epoch: nothing of it can have been lost
    asked = len(records.asked)
    before = script_calls(redis_client)
    assert store.check(CheckItem("other", "op"), minute).limits[0].remaining == 4
    assert len(records.asked) == asked
    assert script_calls(redis_client) - before == 1


def test_a_library_lost_with_redis_is_loaded_again_by_the_next_check(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    store = RedisStore(redis_client, key_prefix, clock=ManualClock(START_MS))
    limits = (LimitSpec("w", "fixed_window", 3, period_s=60, key_by=("customer",)),)
    assert store.check(CheckItem("c", "op"), limits).limits[0].remaining == 2
    name, _ = shape_library(shape_of(limits, False))  # type: ignore[arg-type]
    redis_client.function_delete(name)  # as a restart or FUNCTION FLUSH leaves it
    assert store.check(CheckItem("c", "op"), limits).limits[0].remaining == 1
    assert redis_client.function_list(library=name)


def test_no_state_of_a_library_call_reaches_the_next(redis_client: redis.Redis, key_prefix: str) -> None:
    """A Function's code lives between calls: what one call read or set (a test clock's 10-minute TTL floor, the
    counters it fetched) must not reach the next, as it cannot between script calls."""
    limits = (LimitSpec("w", "fixed_window", 3, period_s=1, key_by=("customer",)),)
    on_test_clock = RedisStore(redis_client, key_prefix, clock=ManualClock(START_MS))
    on_redis_time = RedisStore(redis_client, key_prefix)
    on_test_clock.check(CheckItem("a", "op"), limits)  # its call lifts the TTL floor to 10 minutes
    assert on_redis_time.check(CheckItem("b", "op"), limits).limits[0].remaining == 2
    (key,) = redis_client.keys(f"{key_prefix}:*b*")
    assert 0 < redis_client.pttl(key) <= 2_000  # the window's second and SLACK_MS, not the test clock's floor
    redis_client.delete(key)  # the next call must read it afresh, not remember it
    assert on_redis_time.check(CheckItem("b", "op"), limits).limits[0].remaining == 2


def test_a_server_without_functions_gets_the_shape_as_a_script(key_prefix: str) -> None:
    server = RedisServer(extra_args=("--rename-command", "FCALL", "")).start()  # FCALL unknown, as before 7.0
    try:
        client = redis.Redis.from_url(server.url)
        store = RedisStore(client, key_prefix, clock=ManualClock(START_MS))
        limits = (LimitSpec("w", "fixed_window", 3, period_s=60, key_by=("customer",)),)
        assert [store.check(CheckItem("c", "op"), limits).limits[0].remaining for _ in range(3)] == [2, 1, 0]
        before = script_calls(client)
        assert not store.check(CheckItem("c", "op"), limits).allowed
        assert script_calls(client) - before == 1  # one EVALSHA: the fall back stays
        assert client.script_exists(with_deadline(shape_script(shape_of(limits, False)).text))  # type: ignore[arg-type]
    finally:
        server.cleanup()


def test_an_error_in_a_library_names_its_lua_file_and_line() -> None:
    _, library = shape_library(shape_of([LimitSpec("w", "fixed_window", 1, period_s=1)], False))  # type: ignore[arg-type]
    at = next(n for n, text in enumerate(library.lines, 1) if text.startswith("local now = read_now"))
    in_file = lua_file("shape.lua").splitlines().index(library.lines[at - 1]) + 1
    assert library.located(f"user_function:{at}: boom") == f"shape.lua:{in_file} (user_function:{at}): boom"
