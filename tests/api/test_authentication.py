"""The service API's key guard: failed key attempts per client address and key prefix are slowed down (429),
a valid key never is, whatever was sent before it from the same address."""

import pytest

from apps.api.authentication import BadKeyGuard
from tests.api_fixtures import client_with

ADDRESS, PREFIX = "198.51.100.1", "qp_0badc0de"
INGRESS = "10.0.0.2"  # the one REMOTE_ADDR every caller has behind an ingress or NAT


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def fail(guard: BadKeyGuard, times: int, address: str = ADDRESS, prefix: str = PREFIX) -> list[float]:
    return [guard.failed(address, prefix) for _ in range(times)]


# ---- the guard on its own, with an injected clock ------------------------------------------------------------


def test_failures_past_the_limit_wait_until_the_oldest_leaves_the_window() -> None:
    clock = Clock()
    guard = BadKeyGuard(limit=3, window_s=60, clock=clock)
    for _ in range(3):
        assert guard.failed(ADDRESS, PREFIX) == 0
        clock.now += 1

    assert guard.failed(ADDRESS, PREFIX) == pytest.approx(57.0)  # first failure at 1000, now 1003
    clock.now = 1060.5
    assert guard.failed(ADDRESS, PREFIX) == 0  # the first failure left the window: one more 401
    assert guard.failed(ADDRESS, PREFIX) == pytest.approx(0.5)  # the second (1001) leaves at 1061


def test_attempts_refused_with_429_do_not_make_the_wait_longer() -> None:
    clock = Clock()
    guard = BadKeyGuard(limit=2, window_s=60, clock=clock)
    fail(guard, 2)
    for _ in range(50):
        clock.now += 1
        guard.failed(ADDRESS, PREFIX)

    clock.now = 1060.0
    assert guard.failed(ADDRESS, PREFIX) == 0


def test_addresses_and_prefixes_are_counted_apart() -> None:
    guard = BadKeyGuard(limit=2, window_s=60, clock=Clock())
    assert fail(guard, 3) == [0, 0, 60]

    assert guard.failed("198.51.100.2", PREFIX) == 0
    assert guard.failed(ADDRESS, "qp_other") == 0
    assert guard.failed(ADDRESS, "") == 0  # a malformed key counts under no prefix


def test_the_limit_and_window_come_from_the_settings_when_not_given(settings) -> None:
    settings.QUOTA_BAD_KEY_LIMIT, settings.QUOTA_BAD_KEY_WINDOW_S = 2, 30
    guard = BadKeyGuard(clock=Clock())

    assert fail(guard, 3) == [0, 0, 30]


def test_a_limit_of_zero_turns_the_guard_off() -> None:
    assert set(fail(BadKeyGuard(limit=0, window_s=60, clock=Clock()), 100)) == {0}


def test_memory_stays_bounded_when_an_attacker_rotates_addresses_and_prefixes() -> None:
    clock = Clock()
    guard = BadKeyGuard(limit=5, window_s=60, max_entries=100, clock=clock)
    for n in range(5000):
        guard.failed(f"2001:db8::{n:x}", f"qp_{n:08x}" + "x" * 500)
        clock.now += 0.001
    assert len(guard) == 100

    clock.now += 61  # everything expired: the next failure sweeps the lot
    guard.failed(ADDRESS, PREFIX)
    assert len(guard) == 1


def test_the_least_recently_failing_pair_is_forgotten_first_when_full() -> None:
    clock = Clock()
    guard = BadKeyGuard(limit=1, window_s=60, max_entries=2, clock=clock)
    fail(guard, 1, address="a")
    fail(guard, 1, address="b")
    fail(guard, 1, address="a")  # refused, and now the most recent
    fail(guard, 1, address="c")  # evicts b

    assert guard.failed("a", PREFIX) > 0
    assert guard.failed("b", PREFIX) == 0


# ---- through the HTTP stack ----------------------------------------------------------------------------------


def check(key: str, **meta: str):  # type: ignore[no-untyped-def]
    body = {"customer": "acct-1", "operation": "ReadItems"}
    return client_with(key).post("/api/v1/check", body, format="json", REMOTE_ADDR=INGRESS, **meta)


def wrong_secret(valid_key: str) -> str:
    return valid_key.partition(".")[0] + ".not-the-secret"


@pytest.fixture(autouse=True)
def _guard_settings(settings) -> None:  # type: ignore[no-untyped-def]
    settings.QUOTA_BAD_KEY_LIMIT, settings.QUOTA_BAD_KEY_WINDOW_S = 20, 60
    settings.QUOTA_UNKNOWN_OPERATIONS = "allow"  # a valid key's check answers 200 without configuring limits


@pytest.mark.django_db
@pytest.mark.parametrize(("proxies", "forwarded_for"), [(0, ""), (1, "203.0.113.5"), (1, "192.0.2.1, 203.0.113.5")])
def test_fifty_bad_keys_then_a_valid_key_from_the_same_address_is_served(
    service_key, engine, settings, proxies, forwarded_for
) -> None:
    settings.TRUSTED_PROXY_COUNT = proxies
    statuses = [check(wrong_secret(service_key), HTTP_X_FORWARDED_FOR=forwarded_for).status_code for _ in range(50)]
    assert statuses == [401] * 20 + [429] * 30

    assert check(service_key, HTTP_X_FORWARDED_FOR=forwarded_for).status_code == 200


@pytest.mark.django_db
def test_bad_keys_past_the_limit_get_429_too_many_bad_keys_with_retry_after(service_key, engine) -> None:
    first = [check("qp_deadbeef.guess") for _ in range(20)]
    assert {response.status_code for response in first} == {401}
    assert first[0].json()["error"]["code"] == "unauthenticated"

    refused = check("qp_deadbeef.guess")
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "too_many_bad_keys"
    assert refused["Retry-After"] == "60"


@pytest.mark.django_db
def test_behind_one_trusted_proxy_clients_sharing_an_address_are_counted_apart(service_key, engine, settings) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    noisy = {"HTTP_X_FORWARDED_FOR": "203.0.113.5"}
    for _ in range(20):
        check("qp_deadbeef.guess", **noisy)
    assert check("qp_deadbeef.guess", **noisy).status_code == 429
    # What the client itself prepends to X-Forwarded-For is not trusted: still the same client.
    assert check("qp_deadbeef.guess", HTTP_X_FORWARDED_FOR="192.0.2.99, 203.0.113.5").status_code == 429

    assert check("qp_deadbeef.guess", HTTP_X_FORWARDED_FOR="203.0.113.6").status_code == 401


@pytest.mark.django_db
def test_each_presented_key_prefix_is_counted_apart(service_key, engine) -> None:
    for _ in range(20):
        check("qp_deadbeef.guess")
    assert check("qp_deadbeef.other-guess").status_code == 429

    assert check("qp_cafef00d.guess").status_code == 401
    assert check(wrong_secret(service_key)).status_code == 401
