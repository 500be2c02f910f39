"""The session_time reference model on an injected clock (plain integers: epoch ms)."""

from __future__ import annotations

from apps.engine.reference import session_time as model
from apps.engine.reference.base import Params

MINUTE = 60_000
T0 = 1_705_276_800_000  # a multiple of every period here
TEN_S_PER_MINUTE = Params(quantity=10, period_ms=MINUTE, capacity=10)


def opened(*leases: tuple[str, int, int]) -> model.State:
    """A state with sessions opened at (member, at, ttl_ms), in order."""
    state = None
    for member, at, ttl in leases:
        state = model.consume(state, TEN_S_PER_MINUTE, at, 1, (member, ttl))
    assert state is not None
    return state


def test_open_sessions_count_their_elapsed_time_live() -> None:
    state = opened(("a", T0, 30_000), ("b", T0 + 2_000, 30_000))
    assert model.report(state, TEN_S_PER_MINUTE, T0 + 5_000) == (10 - 8, MINUTE - 5_000)  # 5 s + 3 s
    assert model.evaluate(state, TEN_S_PER_MINUTE, T0 + 5_999, 1) == (True, 0)  # 5.999 + 3.999 < 10 s
    # Spent at T0 + 6 s (6 + 4): refused until the window ends, exactly.
    assert model.evaluate(state, TEN_S_PER_MINUTE, T0 + 6_000, 1) == (False, MINUTE - 6_000)
    assert model.evaluate(state, TEN_S_PER_MINUTE, T0 + MINUTE - 1, 1) == (False, 1)
    assert model.evaluate(state, TEN_S_PER_MINUTE, T0 + MINUTE, 1) == (True, 0)


def test_a_released_session_keeps_its_time_and_stops_counting() -> None:
    state = model.release(opened(("a", T0, 30_000)), TEN_S_PER_MINUTE, T0 + 4_000, "a")
    assert state == (T0, 4_000, ())
    assert model.report(state, TEN_S_PER_MINUTE, T0 + 50_000)[0] == 6
    assert model.release(state, TEN_S_PER_MINUTE, T0 + 5_000, "a") == state  # unknown: no-op


def test_an_expired_session_counts_up_to_its_expiry_only() -> None:
    state = opened(("a", T0, 3_000))
    assert model.settle(state, MINUTE, T0 + 40_000) == (T0, 3_000, ())
    assert model.report(state, TEN_S_PER_MINUTE, T0 + 40_000)[0] == 7


def test_a_session_across_a_window_start_counts_from_that_start() -> None:
    state = opened(("a", T0 + 50_000, 30_000))  # held T0+50 s .. T0+80 s
    assert model.report(state, TEN_S_PER_MINUTE, T0 + MINUTE + 5_000) == (5, MINUTE - 5_000)
    assert model.settle(state, MINUTE, T0 + 2 * MINUTE) == (T0 + 2 * MINUTE, 0, ())
    # The old window's time is not carried over; it still bounds when the state can be forgotten.
    assert model.expires_at(state, TEN_S_PER_MINUTE, T0 + 50_000) == T0 + 2 * MINUTE


def test_renew_moves_the_expiry_and_reopens_a_lost_session() -> None:
    state = model.renew(opened(("a", T0, 5_000)), TEN_S_PER_MINUTE, T0 + 4_000, "a", T0 + 20_000)
    assert state == (T0, 0, (("a", T0, T0 + 20_000),))
    fresh = model.renew(None, TEN_S_PER_MINUTE, T0 + 4_000, "b", T0 + 9_000)
    assert fresh == (T0, 0, (("b", T0 + 4_000, T0 + 9_000),))


def test_a_partial_second_left_still_admits_and_reports_one() -> None:
    state = opened(("a", T0, 30_000))
    assert model.report(state, TEN_S_PER_MINUTE, T0 + 9_500) == (1, MINUTE - 9_500)
    assert model.evaluate(state, TEN_S_PER_MINUTE, T0 + 9_500, 1) == (True, 0)
    assert model.report(state, TEN_S_PER_MINUTE, T0 + 12_000)[0] == 0  # past the quantity: the lease runs on


def test_no_time_at_all_never_admits() -> None:
    assert model.evaluate(None, Params(0, MINUTE, 0), T0, 1) == (False, None)


def test_a_check_without_a_lease_takes_nothing() -> None:
    assert model.consume(None, TEN_S_PER_MINUTE, T0 + 1, 1) == (T0, 0, ())
