"""The monopolization score shown on a customer's usage page: which limits feed which term, and the sum."""

import pytest

from apps.console.monopolization import HELD_TIME, OPENINGS, SESSIONS, dimension_of, monopolization_score
from apps.enforcement.counters.inspection import LimitState
from apps.limits.snapshot import LimitConfig


def state(name, *, algorithm="fixed_window", unit="requests", used=0, capacity=10, key_by=("customer",)):
    config = LimitConfig(
        name=name, operation="OpenSession", algorithm=algorithm, quantity=capacity, period_s=60, calendar_period=None,
        burst=None, unit=unit, key_by=key_by, match=(), mode="enforce", on_store_failure="open", plan=None,
    )  # fmt: skip
    return LimitState(config, capacity, capacity, False, used=used, remaining=capacity - used)


@pytest.mark.parametrize(
    ("algorithm", "unit", "dimension"),
    [
        ("concurrency", "requests", SESSIONS),
        ("fixed_window", "requests", OPENINGS),
        ("token_bucket", "requests", OPENINGS),
        ("session_time", "seconds", HELD_TIME),
        # A time the caller reports as a cost is not measured session time.
        ("calendar", "seconds", None),
        ("fixed_window", "session_seconds", None),
        ("token_bucket", "bytes", None),
        ("fixed_window", "records", None),
    ],
)
def test_each_limit_feeds_the_term_its_kind_and_unit_say(algorithm, unit, dimension) -> None:
    assert dimension_of(state("x", algorithm=algorithm, unit=unit)) == dimension


def test_the_score_adds_sessions_openings_and_session_time() -> None:
    score = monopolization_score(
        [
            state("sessions", algorithm="concurrency", used=3, capacity=5),
            state("openings", used=12, capacity=20),
            state("time", algorithm="session_time", unit="seconds", used=900, capacity=3600),
        ]
    )

    assert [term.dimension for term in score.terms] == [SESSIONS, OPENINGS, HELD_TIME]
    assert score.value == pytest.approx(0.6 + 0.6 + 0.25)
    assert score.maximum == 3
    assert score.expression == "3/5 + 12/20 + 900/3,600 = 1.45"


def test_the_busiest_limit_of_a_term_counts_once() -> None:
    score = monopolization_score([state("per-minute", used=2, capacity=10), state("per-day", used=90, capacity=100)])

    assert [(term.limit, term.ratio) for term in score.terms] == [("per-day", 0.9)]
    assert score.value == pytest.approx(0.9)


def test_limits_that_cannot_be_read_or_measure_throughput_are_left_out() -> None:
    unreadable = LimitState(state("shared").limit, 10, 10, False, note="shared with other customers")
    score = monopolization_score([unreadable, state("bytes", unit="bytes", used=10, capacity=10)])

    assert score.terms == ()
    assert score.value == 0
    assert "no session, opening or session-time limit applies" in score.expression
