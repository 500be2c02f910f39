"""Session time through the lease endpoints: acquire and renew refused once the window's seconds are spent,
with the exact retry_after_ms; a plain check only looks."""

import pytest

from apps.limits.models import Algorithm
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db
MINUTE = 60_000


@pytest.fixture
def limits(db):
    operation = OperationFactory(name="OpenSession")
    LimitFactory(
        name="sessions", operation=operation, algorithm=Algorithm.CONCURRENCY, quantity=5, period_seconds=600,
        key_by=["customer"],
    )  # fmt: skip
    return LimitFactory(
        name="session-seconds", operation=operation, algorithm=Algorithm.SESSION_TIME, quantity=10,
        period_seconds=60, unit="seconds", key_by=["customer"],
    )  # fmt: skip


def acquire(api, customer="acct-1", ttl_s=30):
    body = {"customer": customer, "operation": "OpenSession", "ttl_s": ttl_s}
    return api.post("/api/v1/leases", body, format="json")


def renew(api, lease_id, ttl_s=30):
    return api.post(f"/api/v1/leases/{lease_id}/renew", {"ttl_s": ttl_s}, format="json")


def test_acquire_is_refused_once_the_session_time_is_spent_until_the_window_ends(api, limits, clock) -> None:
    first = acquire(api)
    assert first.status_code == 201
    assert first.json()["limits"][1]["remaining"] == 10
    clock.advance(4_000)
    assert acquire(api).status_code == 201  # 4 s held so far
    clock.advance(3_000)  # 7 s + 3 s = the 10 s of the window

    refused = acquire(api)
    assert refused.status_code == 429
    body = refused.json()
    assert (body["code"], body["retry_after_ms"]) == ("OVER_LIMIT", MINUTE - 7_000)
    assert refused["Retry-After"] == "53"
    assert [(entry["name"], entry["remaining"], entry["over"]) for entry in body["limits"]] == [
        ("sessions", 3, False),
        ("session-seconds", 0, True),
    ]
    assert acquire(api, customer="acct-2").status_code == 201

    clock.advance(MINUTE - 7_000)
    assert acquire(api).status_code == 201


def test_renew_is_refused_when_spent_and_the_lease_runs_to_its_expiry(api, limits, clock) -> None:
    lease_id = acquire(api, ttl_s=55).json()["lease_id"]
    clock.advance(9_000)
    assert renew(api, lease_id, 55).status_code == 200
    clock.advance(1_000)

    refused = renew(api, lease_id)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["code"], error["fields"]) == ("session_time_spent", {"retry_after_ms": MINUTE - 10_000})
    assert refused["Retry-After"] == "50"

    clock.advance(MINUTE - 10_000)  # a new window; the lease (until 64 s) still lives
    assert renew(api, lease_id).status_code == 200


def test_a_plain_check_only_looks_at_session_time(api, limits, clock) -> None:
    acquire(api)
    clock.advance(10_000)
    body = {"customer": "acct-1", "operation": "OpenSession"}

    refused = api.post("/api/v1/check", body, format="json")
    assert (refused.status_code, refused.json()["retry_after_ms"]) == (429, MINUTE - 10_000)
    clock.advance(MINUTE - 10_000)
    allowed = api.post("/api/v1/check", body, format="json")
    assert allowed.status_code == 200
    assert allowed.json()["limits"][0]["remaining"] == 10  # the check took nothing
