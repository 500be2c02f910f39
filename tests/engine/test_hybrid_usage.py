"""hybrid_usage.lua (apps/engine/hybrid_usage.py) answers every sync exactly as its reference model UsageBalances
does, and the model adds to usage what reports and counters show, each admission once. Real Redis."""

from __future__ import annotations

import uuid
from typing import Any

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine import ManualClock
from apps.engine.hybrid_usage import Balanced, RedisUsageBalances, ReportedCounter, UsageBalances

WINDOW = 60_000
LIMITS = {"hot": "requests", "daily": "requests", "bytes:in": "records"}  # a name with a separator in it

counters = st.lists(
    st.tuples(st.sampled_from(sorted(LIMITS)), st.integers(0, 3), st.integers(0, 40), st.integers(0, 40)),
    max_size=3,
    unique_by=lambda counter: counter[0],
)
syncs = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),  # instance
        st.one_of(st.none(), st.integers(1, 4)),  # the report's sequence (None: no report)
        st.dictionaries(st.sampled_from(["requests", "records"]), st.integers(0, 30), max_size=2),
        counters,
    ),
    min_size=1,
    max_size=25,
)


def _counters(drawn: list[Any]) -> list[ReportedCounter]:
    return [
        ReportedCounter(limit, LIMITS[limit], window * WINDOW, count, (window - 1) * WINDOW, count_prev)
        for limit, window, count, count_prev in drawn
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=syncs)
def test_the_script_answers_like_its_reference_model(
    steps: list[Any], redis_client: redis.Redis, key_prefix: str
) -> None:
    clock = ManualClock(1_700_000_000_000)
    prefix = f"{key_prefix}:{uuid.uuid4().hex[:8]}"  # keys of this example's own
    script, model = RedisUsageBalances(redis_client, prefix), UsageBalances(clock.now_ms)
    for instance, sequence, report, drawn in steps:
        pairs = sorted(report.items())
        got = script.add("acct 1", instance, sequence, pairs, _counters(drawn))
        assert got == model.add("acct 1", instance, sequence, pairs, _counters(drawn))


def test_usage_grows_to_what_reports_or_counters_show_and_counts_nothing_twice() -> None:
    balances = UsageBalances(lambda: 0)

    def sync(sequence: int | None, requests: int, count: int) -> Balanced:
        return balances.add(
            "acct", "i", sequence, [("requests", requests)], [ReportedCounter("hot", "requests", 0, count, -1, 0)]
        )

    assert sync(None, 0, 7).costs == (("requests", 7),)  # counters moved, no report: counted anyway
    assert sync(None, 0, 7).costs == ()  # a retry
    assert sync(1, 7, 7) == Balanced(True, (), ())  # the late report of those 7: already in usage
    assert sync(1, 7, 9).costs == (("requests", 2),)  # a resend of it counts nothing; 2 more admitted
    assert sync(2, 4, 11) == Balanced(True, (("requests", 2),), ((0, 0, 2),))  # reports 4 after 7: 11 in all
    assert sync(None, 0, 3).costs == ()  # a count going down gives nothing back
