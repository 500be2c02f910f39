"""Rebuilding a counter from its records (durability.py), against the reference model that spent them:
exact for windows and counters of windows, never more room than the truth for logs and buckets."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine import LimitSpec
from apps.engine.durability import lookback_start, parse_record_field, reach_ms, rebuild, record_bucket, record_field
from apps.engine.reference import zoned_windows
from apps.engine.reference.base import Params
from apps.engine.registry import ALGORITHMS
from tests.engine.conftest import START_MS

MINUTE = 60_000
WINDOWED = ("fixed_window", "calendar", "sliding_window")


def spec_strategy() -> st.SearchStrategy[LimitSpec]:
    algorithm = st.sampled_from(
        ["fixed_window", "sliding_window", "sliding_log", "token_bucket", "leaky_bucket", "gcra"]
    )
    timed = st.builds(
        LimitSpec,
        name=st.just("lim"),
        algorithm=algorithm,
        quantity=st.integers(1, 12),
        period_s=st.sampled_from([60, 90, 300, 3600]),
        burst=st.none(),
        durable=st.just(True),
    )
    daily = st.builds(LimitSpec, name=st.just("lim"), algorithm=st.just("calendar"), quantity=st.integers(1, 12),
                      calendar_period=st.sampled_from(["day", "week"]), durable=st.just(True))  # fmt: skip
    return timed | daily


def params_at(spec: LimitSpec, now: int) -> Params:
    window = (
        zoned_windows.pick_window(zoned_windows.window_bounds(now, "UTC", spec.calendar_period), now)
        if spec.calendar_period
        else (0, 0)
    )  # noqa: E501
    return Params(spec.quantity, spec.period_ms, spec.capacity, window)


@settings(max_examples=300, deadline=None)
@given(spec=spec_strategy(), steps=st.lists(st.tuples(st.integers(0, 40 * MINUTE), st.integers(1, 4)), max_size=30),
       later=st.integers(0, 90 * MINUTE))  # fmt: skip
def test_a_rebuilt_counter_never_has_more_room_than_the_one_it_replaces(spec, steps, later) -> None:
    model = ALGORITHMS[spec.algorithm].model
    now, state = START_MS, None
    records: dict[int, int] = defaultdict(int)
    for step, cost in steps:
        now += step
        params = params_at(spec, now)
        if model.evaluate(state, params, now, cost)[0]:
            state = model.consume(state, params, now, cost)
            records[record_bucket(spec, params, now)] += cost
    now += later
    params = params_at(spec, now)

    rebuilt = rebuild(spec, params, list(records.items()), now)

    true_room, rebuilt_room = model.report(state, params, now)[0], model.report(rebuilt, params, now)[0]
    if spec.algorithm in WINDOWED:
        assert rebuilt_room == true_room
    else:
        assert rebuilt_room <= true_room
    for cost in range(1, spec.capacity + 1):
        if model.evaluate(rebuilt, params, now, cost)[0]:
            assert model.evaluate(state, params, now, cost)[0]


def test_records_name_their_counter_bucket_and_reach() -> None:
    hourly = LimitSpec("h", "fixed_window", 5, period_s=3600, durable=True)
    log = LimitSpec("l", "sliding_log", 5, period_s=600, durable=True)
    bucket = LimitSpec("b", "token_bucket", 10, period_s=60, burst=30, durable=True)
    now = START_MS + 90 * MINUTE + 1234

    assert record_bucket(hourly, params_at(hourly, now), now) == START_MS + 60 * MINUTE
    assert record_bucket(log, params_at(log, now), now) == START_MS + 90 * MINUTE
    assert (reach_ms(hourly), reach_ms(log)) == (60 * MINUTE, 11 * MINUTE)
    # a full bucket of 30 drains at 10 a minute in 3 minutes: its records matter for twice that after their own
    assert reach_ms(bucket) == 7 * MINUTE
    assert lookback_start(log, params_at(log, now), now) == now - 600_000
    assert parse_record_field(record_field("qp:c:{c=a%7C1}:fw:h:c=a%7C1", 10)) == ("qp:c:{c=a%7C1}:fw:h:c=a%7C1", 10)
