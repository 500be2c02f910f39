"""Back-off policies, with injected random and sleep: no test here waits for real."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quota_client import ExponentialBackoff, LinearBackoff, ResponsiveBackoff

from tests.clients.fakes import FakeClock, SequenceRandom


def throttles(policy, count: int, retry_after_s: float | None = None) -> list[float]:
    return [round(policy.on_throttle(retry_after_s), 6) for _ in range(count)]


def test_linear_adds_a_step_per_throttle_up_to_the_cap() -> None:
    policy = LinearBackoff(base_s=1.0, step_s=1.0, max_s=3.5)

    assert throttles(policy, 5) == [1.0, 2.0, 3.0, 3.5, 3.5]


def test_exponential_multiplies_per_throttle_up_to_the_cap() -> None:
    policy = ExponentialBackoff(initial_s=0.1, multiplier=2.0, max_s=0.5)

    assert throttles(policy, 5) == [0.1, 0.2, 0.4, 0.5, 0.5]


@pytest.mark.parametrize("policy", [LinearBackoff(base_s=1, step_s=1), ExponentialBackoff(initial_s=1)])
def test_a_success_starts_the_memoryless_policies_over_without_a_pause(policy) -> None:
    throttles(policy, 3)

    assert policy.on_success() == 0
    assert policy.on_throttle() == 1.0


def test_jitter_only_ever_shortens_a_delay_by_at_most_its_fraction() -> None:
    shortest = ExponentialBackoff(initial_s=2.0, jitter=0.25, random=lambda: 1.0)
    longest = ExponentialBackoff(initial_s=2.0, jitter=0.25, random=lambda: 0.0)

    assert shortest.on_throttle() == pytest.approx(1.5)
    assert longest.on_throttle() == pytest.approx(2.0)


@pytest.mark.parametrize(
    "policy",
    [
        LinearBackoff(base_s=0.1, max_s=0.5, jitter=0.9, random=lambda: 1.0),
        ExponentialBackoff(initial_s=0.1, max_s=0.5, jitter=0.9, random=lambda: 1.0),
        ResponsiveBackoff(initial_s=0.1, max_s=0.5, jitter=0.9, random=lambda: 1.0),
    ],
)
def test_every_policy_waits_at_least_the_advertised_retry_after_even_beyond_its_cap(policy) -> None:
    assert policy.on_throttle(retry_after_s=2.0) == 2.0
    assert policy.retry_delay(retry_after_s=0.75) == 0.75


@pytest.mark.parametrize(
    "policy",
    [LinearBackoff(max_retries=2), ExponentialBackoff(max_retries=2), ResponsiveBackoff(max_retries=2)],
)
def test_the_retry_limit_ends_a_loop_and_leaves_a_clean_slate(policy) -> None:
    first = policy.retry_delay()

    assert policy.retry_delay() is not None
    assert policy.retry_delay() is None
    assert policy.retry_delay() is not None
    assert first is not None
    assert first > 0


def test_sleep_on_throttle_sleeps_through_the_injected_sleep_and_stops_at_the_limit() -> None:
    clock = FakeClock()
    policy = ExponentialBackoff(initial_s=0.5, multiplier=3, max_retries=2, sleep=clock.sleep)

    assert [policy.sleep_on_throttle(), policy.sleep_on_throttle(), policy.sleep_on_throttle()] == [True, True, False]
    assert clock.slept == [0.5, 1.5]


def test_fresh_copies_a_memoryless_policy_but_shares_its_metrics() -> None:
    template = ExponentialBackoff(initial_s=1.0)
    throttles(template, 3)

    loop = template.fresh()

    assert loop is not template
    assert loop.on_throttle() == 1.0
    assert template.metrics.times_up == 4


def test_fresh_keeps_the_responsive_policy_itself_so_its_learned_pace_carries_over() -> None:
    policy = ResponsiveBackoff(initial_s=1.0, up=2.0, randomization=0)
    throttles(policy, 3)

    assert policy.fresh() is policy
    assert policy.fresh().current_s == 4.0


# -- the responsive policy -------------------------------------------------------------------------------------
def responsive(**options) -> ResponsiveBackoff:
    defaults = {"initial_s": 1.0, "max_s": 60.0, "up": 2.0, "down": 0.5, "down_after": 3, "randomization": 0.0}
    return ResponsiveBackoff(**{**defaults, **options})


def test_responsive_starts_at_the_initial_interval_and_multiplies_up_to_the_cap() -> None:
    policy = responsive(max_s=5.0)

    assert throttles(policy, 5) == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_responsive_keeps_pacing_successes_and_shrinks_after_n_in_a_row() -> None:
    policy = responsive()
    throttles(policy, 3)  # 1, 2, 4

    assert [policy.on_success() for _ in range(6)] == [4.0, 4.0, 2.0, 2.0, 2.0, 1.0]


def test_in_the_classic_variant_a_throttle_breaks_the_run_of_successes() -> None:
    # The default (the seed's AutoSleeper) keeps counting: test_auto_sleeper.py.
    policy = responsive(variant="classic")
    throttles(policy, 2)  # 1, 2
    policy.on_success()
    policy.on_success()

    policy.on_throttle()  # 4, and the count of successes starts again

    assert [policy.on_success() for _ in range(3)] == [4.0, 4.0, 2.0]


def test_responsive_drops_to_zero_below_the_initial_interval_and_then_stops_pausing() -> None:
    policy = responsive(initial_s=1.0, down=0.5, down_after=1)
    throttles(policy, 2)  # 1, 2

    assert [policy.on_success() for _ in range(4)] == [1.0, 0.0, 0.0, 0.0]
    assert policy.current_s == 0
    assert policy.on_throttle() == 1.0


def test_randomization_spreads_a_change_by_the_factor_as_in_the_seed_example() -> None:
    # "current delay 1 s, up multiplier 2, randomization 0.2: the next is 1.6 to 2.4"
    low = responsive(randomization=0.2, random=SequenceRandom(0.0))
    high = responsive(randomization=0.2, random=SequenceRandom(1.0))

    assert throttles(low, 2)[1] == pytest.approx(1.6)
    assert throttles(high, 2)[1] == pytest.approx(2.4)


def test_the_randomization_spread_is_capped_in_absolute_terms() -> None:
    policy = responsive(initial_s=100.0, max_s=1000.0, randomization=0.5, max_randomization_s=10.0,
                        random=SequenceRandom(0.0))  # fmt: skip

    assert throttles(policy, 2) == [100.0, 190.0]


@pytest.mark.parametrize(("variant", "sleeps"), [("auto_sleeper", 6), ("classic", 5)])
def test_responsive_keeps_its_own_metrics(variant, sleeps) -> None:
    clock = FakeClock()
    policy = responsive(down_after=2, sleep=clock.sleep, variant=variant)

    policy.sleep_on_throttle()  # up: 1
    policy.sleep_on_throttle()  # up: 2
    policy.sleep_on_success()  # 2
    policy.sleep_on_success()  # down: 1
    policy.sleep_on_success()  # 1
    policy.sleep_on_success()  # down: 0, no pause (the seed counts it as a sleep of zero length)

    assert clock.slept == [1.0, 2.0, 2.0, 1.0, 1.0]
    metrics = policy.metrics.snapshot()
    assert (metrics.invocations, metrics.times_up, metrics.times_down) == (6, 2, 2)
    assert (metrics.sleeps, metrics.total_sleep_s, metrics.total_sleep_ns) == (sleeps, pytest.approx(7.0), 7 * 10**9)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"initial_s": 0}, "initial_s"),
        ({"initial_s": 1e-10}, "1 ns"),
        ({"variant": "go"}, "variant"),
        ({"initial_s": 2, "max_s": 1}, "initial_s"),
        ({"up": 0.5}, "up"),
        ({"down": 1.0}, "down"),
        ({"down_after": 0}, "down_after"),
        ({"randomization": 1.0}, "randomization"),
        ({"jitter": 1.5}, "jitter"),
        ({"max_retries": -1}, "max_retries"),
    ],
)
def test_bad_settings_are_refused_with_the_name_of_the_setting(arguments, message) -> None:
    with pytest.raises(ValueError, match=message):
        ResponsiveBackoff(**arguments)


events = st.lists(st.tuples(st.booleans(), st.floats(0, 1), st.none() | st.floats(0, 50)), min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(
    events=events,
    initial=st.floats(0.001, 5),
    spread=st.floats(1, 100),
    up=st.floats(1, 4),
    down=st.floats(0.05, 0.99),
    down_after=st.integers(1, 5),
    randomization=st.floats(0, 0.99),
    max_randomization=st.floats(0, 100),
)
def test_classic_responsive_stays_within_its_bounds_and_its_metrics_add_up(
    events, initial, spread, up, down, down_after, randomization, max_randomization
) -> None:
    randoms = SequenceRandom(*[value for _, value, _ in events])
    policy = ResponsiveBackoff(
        initial, initial * spread, up=up, down=down, down_after=down_after, randomization=randomization,
        max_randomization_s=max_randomization, random=randoms, variant="classic",
    )  # fmt: skip
    handed_out = []
    for throttled, _, floor in events:
        delay = policy.on_throttle(floor) if throttled else policy.on_success()
        handed_out.append(delay)
        assert policy.current_s == 0 or initial <= policy.current_s <= initial * spread
        assert delay == policy.current_s or (throttled and floor is not None and delay == floor > policy.current_s)
        if throttled and floor is not None:
            assert delay >= floor

    metrics = policy.metrics.snapshot()
    assert metrics.invocations == len(events)
    assert metrics.times_up == sum(throttled for throttled, _, _ in events)
    assert metrics.sleeps == sum(delay > 0 for delay in handed_out)
    assert metrics.total_sleep_s == pytest.approx(sum(handed_out))


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(["linear", "exponential", "responsive", "classic"]),
    jitter=st.floats(0, 1),
    cap=st.floats(0.01, 10),
    events=events,
)
def test_no_policy_waits_less_than_the_floor_or_more_than_its_cap_unless_the_floor_says_so(kind, jitter, cap, events):
    randoms = SequenceRandom(*[value for _, value, _ in events])
    policy = {
        "linear": lambda: LinearBackoff(base_s=cap / 4, step_s=cap / 3, max_s=cap, jitter=jitter, random=randoms),
        "exponential": lambda: ExponentialBackoff(initial_s=cap / 8, max_s=cap, jitter=jitter, random=randoms),
        "responsive": lambda: ResponsiveBackoff(cap / 8, cap, jitter=jitter, random=randoms),
        "classic": lambda: ResponsiveBackoff(cap / 8, cap, jitter=jitter, random=randoms, variant="classic"),
    }[kind]()
    # The seed's randomized step down is not capped: at the cap it may land up to down × (1 + randomization) above.
    cap_reached = cap * (0.9 * 1.3 if kind == "responsive" else 1)

    for throttled, _, floor in events:
        delay = policy.on_throttle(floor) if throttled else policy.on_success()
        assert 0 <= delay <= max(cap_reached, cap, floor or 0) * (1 + 1e-9)
        if throttled and floor is not None:
            assert delay >= floor
