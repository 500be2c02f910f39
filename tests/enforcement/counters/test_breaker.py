"""The circuit breaker, driven by an injected clock."""

from apps.enforcement.counters.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_it_opens_after_the_threshold_of_failures_in_a_row() -> None:
    breaker = CircuitBreaker(failure_threshold=3, open_s=2, clock=Clock())
    for _ in range(2):
        breaker.record_failure()
    assert breaker.allow()
    assert breaker.state == CLOSED

    breaker.record_failure()

    assert breaker.state == OPEN
    assert not breaker.allow()


def test_a_success_resets_the_count_of_failures() -> None:
    breaker = CircuitBreaker(failure_threshold=2, open_s=2, clock=Clock())
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()

    assert breaker.state == CLOSED


def test_after_the_open_period_one_probe_goes_through_and_its_success_closes_the_breaker() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=1, open_s=2, clock=clock)
    breaker.record_failure()
    clock.now += 2

    assert breaker.state == HALF_OPEN
    assert breaker.allow() is True
    assert breaker.allow() is False  # only one probe at a time
    breaker.record_success()
    assert breaker.state == CLOSED
    assert breaker.allow()


def test_a_failed_probe_opens_the_breaker_again_for_a_full_period() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=5, open_s=2, clock=clock)
    for _ in range(5):
        breaker.record_failure()
    clock.now += 2
    assert breaker.allow()

    breaker.record_failure()

    assert breaker.state == OPEN
    clock.now += 1.9
    assert not breaker.allow()


def test_it_stays_closed_when_redis_answers_the_confirmation_whatever_failed() -> None:
    pings = []
    breaker = CircuitBreaker(failure_threshold=2, open_s=2, clock=Clock(), confirm=lambda: pings.append(1) or True)
    for _ in range(10):
        breaker.record_failure()

    assert breaker.state == CLOSED
    assert breaker.allow()
    assert len(pings) == 5  # asked each time the failures reached the threshold again


def test_it_opens_when_redis_does_not_answer_the_confirmation() -> None:
    def ping() -> bool:
        raise ConnectionError("refused")

    breaker = CircuitBreaker(failure_threshold=2, open_s=2, clock=Clock(), confirm=ping)
    breaker.record_failure()
    assert breaker.state == CLOSED

    breaker.record_failure()

    assert breaker.state == OPEN


def test_a_failed_probe_closes_the_breaker_when_redis_answers_after_all() -> None:
    clock = Clock()
    answers = iter([False, True])
    breaker = CircuitBreaker(failure_threshold=1, open_s=2, clock=clock, confirm=lambda: next(answers))
    breaker.record_failure()
    assert breaker.state == OPEN
    clock.now += 2
    assert breaker.allow()

    breaker.record_failure()  # the probe was a request that failed on its own

    assert breaker.state == CLOSED


def test_a_probe_that_could_not_reach_redis_reopens_without_asking_again() -> None:
    clock, pings = Clock(), []
    breaker = CircuitBreaker(failure_threshold=1, open_s=2, clock=clock, confirm=lambda: pings.append(1) or False)
    breaker.record_failure(unreachable=True)
    assert (breaker.state, len(pings)) == (OPEN, 1)  # from closed: a timeout may be the call's own, so it asks
    clock.now += 2
    assert breaker.allow()

    breaker.record_failure(unreachable=True)  # the probe timed out: one timeout, not a second one for a PING

    assert (breaker.state, len(pings)) == (OPEN, 1)
    clock.now += 1.9
    assert not breaker.allow()
