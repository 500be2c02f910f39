"""Admin login brute-force protection (django-axes): a user name at an address is paused, then let in again."""

import datetime as dt
import secrets

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.utils import timezone

from tests.quota_platform.test_settings import PRODUCTION_ENV, run_manage

pytestmark = pytest.mark.django_db

LOGIN_URL = "/admin/login/"
FAILURE_LIMIT = 3
ATTACKER = "198.51.100.7"
ELSEWHERE = "203.0.113.9"


@pytest.fixture(autouse=True)
def lockout_settings(settings) -> None:  # type: ignore[no-untyped-def]
    settings.AXES_FAILURE_LIMIT = FAILURE_LIMIT
    settings.AXES_COOLOFF_TIME = 0.25  # hours, as AXES_COOLOFF_HOURS gives it
    settings.TRUSTED_PROXY_COUNT = 0


@pytest.fixture
def alice(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_superuser("alice", "alice@example.com", "right-password")


def sign_in(password: str, address: str, username: str = "alice", **headers: str):  # type: ignore[no-untyped-def]
    return Client().post(
        LOGIN_URL, {"username": username, "password": password, "next": "/admin/"}, REMOTE_ADDR=address, **headers
    )


def fail_until_locked(address: str = ATTACKER, username: str = "alice"):  # type: ignore[no-untyped-def]
    responses = [sign_in("wrong", address, username) for _ in range(FAILURE_LIMIT)]
    assert [response.status_code for response in responses[:-1]] == [200] * (FAILURE_LIMIT - 1)
    return responses[-1]


def test_the_limit_th_failure_locks_the_user_at_that_address_out_even_with_the_right_password(alice) -> None:
    locked = fail_until_locked()

    assert locked.status_code == 429
    retry = sign_in("right-password", ATTACKER)
    assert retry.status_code == 429
    assert "_auth_user_id" not in retry.client.session


def test_the_lockout_page_says_what_happened_and_when_to_try_again(alice) -> None:
    before = timezone.now()

    page = fail_until_locked().content.decode()

    assert "Sign-in is paused for the user name “alice” from your address (198.51.100.7)" in page
    assert f"there were {FAILURE_LIMIT} failed sign-in attempts." in page
    assert "You can try again in 15 minutes, after" in page
    retry_at = before + dt.timedelta(minutes=15)
    assert f"{retry_at:%H:%M} UTC" in page or f"{retry_at + dt.timedelta(minutes=1):%H:%M} UTC" in page
    assert "this user from another address, can still" in page


def test_the_same_user_from_another_address_can_still_sign_in(alice) -> None:
    fail_until_locked()

    response = sign_in("right-password", ELSEWHERE)

    assert response.status_code == 302
    assert response["Location"] == "/admin/"


def test_another_user_from_the_locked_address_can_still_sign_in(alice, django_user_model) -> None:
    django_user_model.objects.create_superuser("bob", "bob@example.com", "bobs-password")
    fail_until_locked()

    assert sign_in("bobs-password", ATTACKER, username="bob").status_code == 302


def test_the_lockout_ends_by_itself_after_the_cool_off(alice) -> None:
    fail_until_locked()
    # Time travel: the failures happened just over a cool-off ago.
    AccessAttempt.objects.update(attempt_time=timezone.now() - dt.timedelta(minutes=15, seconds=1))

    assert sign_in("right-password", ATTACKER).status_code == 302


def test_the_lockout_has_not_ended_just_before_the_cool_off(alice) -> None:
    fail_until_locked()
    AccessAttempt.objects.update(attempt_time=timezone.now() - dt.timedelta(minutes=14, seconds=50))

    assert sign_in("right-password", ATTACKER).status_code == 429


def test_a_success_clears_the_earlier_failures(alice) -> None:
    for _ in range(FAILURE_LIMIT - 1):
        sign_in("wrong", ATTACKER)
    assert sign_in("right-password", ATTACKER).status_code == 302

    assert sign_in("wrong", ATTACKER).status_code == 200  # counting starts again


def test_behind_a_proxy_the_address_is_the_one_the_proxy_saw_not_one_the_client_claims(alice, settings) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.2"
    for claimed in ("1.1.1.1", "2.2.2.2", "3.3.3.3"):
        # The attacker varies the X-Forwarded-For it sends; the proxy appends the real address.
        sign_in("wrong", proxy, HTTP_X_FORWARDED_FOR=f"{claimed}, {ATTACKER}")

    assert sign_in("right-password", proxy, HTTP_X_FORWARDED_FOR=ATTACKER).status_code == 429
    assert sign_in("right-password", proxy, HTTP_X_FORWARDED_FOR=ELSEWHERE).status_code == 302


def test_a_lockout_that_never_ends_is_refused_at_start() -> None:
    env = {**PRODUCTION_ENV, "SECRET_KEY": secrets.token_urlsafe(60), "AXES_COOLOFF_HOURS": "0"}

    result = run_manage("check", env=env)

    assert result.returncode != 0
    assert "AXES_COOLOFF_HOURS must be more than 0" in result.stderr
