from apps.engine.reference import concurrency
from apps.engine.reference.base import Params

PARAMS = Params(quantity=2, period_ms=0, capacity=2)
T0 = 1_000_000_000_000


def test_leases_count_until_released_or_expired() -> None:
    state = concurrency.consume(None, PARAMS, T0, 1, ("a", 5_000))
    state = concurrency.consume(state, PARAMS, T0 + 1_000, 1, ("b", 5_000))
    assert concurrency.evaluate(state, PARAMS, T0 + 2_000, 1) == (False, 3_000)
    assert concurrency.evaluate(state, PARAMS, T0 + 5_000, 1) == (True, 0)
    assert concurrency.evaluate(concurrency.release(state, T0 + 2_000, "a"), PARAMS, T0 + 2_000, 1) == (True, 0)


def test_renew_extends_a_live_lease_but_never_revives_an_expired_one() -> None:
    state = concurrency.consume(None, PARAMS, T0, 1, ("a", 5_000))
    renewed, expires = concurrency.renew(state, T0 + 4_000, "a", 5_000)
    assert expires == T0 + 9_000
    assert concurrency.report(renewed, PARAMS, T0 + 4_000) == (1, 5_000)
    assert concurrency.renew(state, T0 + 5_000, "a", 5_000) == ((), None)


def test_a_check_without_a_lease_only_looks() -> None:
    state = concurrency.consume(None, PARAMS, T0, 1, None)
    assert concurrency.report(state, PARAMS, T0) == (2, 0)


def test_a_limit_of_zero_can_never_pass() -> None:
    assert concurrency.evaluate(None, Params(quantity=0, period_ms=0, capacity=0), T0, 1) == (False, None)
