"""A renewal is held to the cap acquiring is held to (issue 23 finding 11): a concurrency limit's period is the
longest a lease may run, so renewing past it is refused with acquire's own answer and the lease's expiry in
Redis stays where it was. Before, a renewal accepted up to a day on a limit whose leases were capped at an hour."""

from __future__ import annotations

import pytest

from apps.engine import KeyLayout
from apps.limits.models import Algorithm
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db

LONGEST_S = 3600


@pytest.fixture
def hourly_sessions(db):
    return LimitFactory(
        name="hourly-sessions",
        operation=OperationFactory(name="OpenSession"),
        algorithm=Algorithm.CONCURRENCY,
        quantity=2,
        period_seconds=LONGEST_S,
        key_by=["customer"],
    )


def acquire(api, **fields):
    return api.post("/api/v1/leases", {"customer": "acct-1", "operation": "OpenSession", **fields}, format="json")


def renew(api, lease_id: str, body: dict):
    return api.post(f"/api/v1/leases/{lease_id}/renew", body, format="json")


def expiry_in_redis(redis_client, key_prefix: str, lease_id: str) -> tuple[float | None, int]:
    """The lease's expiry as the concurrency set holds it, and its record's remaining time to live."""
    layout = KeyLayout(key_prefix)
    counter, member = layout.lease_target(lease_id)
    return redis_client.zscore(counter, member), redis_client.pttl(layout.lease_record_key(counter, member))


@pytest.mark.parametrize("ttl_s", [LONGEST_S + 1, 86_400])
def test_a_renewal_past_the_limits_longest_lease_is_refused_like_acquire(
    api, hourly_sessions, redis_client, key_prefix, ttl_s
) -> None:
    lease_id = acquire(api, ttl_s=LONGEST_S).json()["lease_id"]
    before = expiry_in_redis(redis_client, key_prefix, lease_id)

    refused = renew(api, lease_id, {"ttl_s": ttl_s})

    acquiring = acquire(api, ttl_s=ttl_s)
    assert refused.status_code == acquiring.status_code == 400
    assert refused.json() == acquiring.json()
    assert f"between 1 and {LONGEST_S} seconds for limit hourly-sessions" in refused.json()["error"]["message"]
    assert refused.json()["error"]["fields"] == {"ttl_s": [f"1..{LONGEST_S}"]}
    expires, record_ttl = expiry_in_redis(redis_client, key_prefix, lease_id)
    assert expires == before[0] == 1_767_225_600_000 + LONGEST_S * 1000
    assert 0 < record_ttl <= before[1], "the record's time to live (Redis' own clock) was not extended"


def test_a_renewal_up_to_the_longest_lease_is_accepted(api, hourly_sessions, clock) -> None:
    lease_id = acquire(api, ttl_s=60).json()["lease_id"]

    renewed = renew(api, lease_id, {"ttl_s": LONGEST_S})

    assert renewed.status_code == 200
    assert renewed.json()["expires_at"] == "2026-01-01T01:00:00.000+00:00"


def test_a_renewal_without_ttl_takes_acquires_default_held_to_the_cap(api, clock) -> None:
    LimitFactory(
        name="short-sessions",
        operation=OperationFactory(name="OpenSession"),
        algorithm=Algorithm.CONCURRENCY,
        quantity=2,
        period_seconds=120,
        key_by=["customer"],
    )
    acquired = acquire(api).json()
    assert acquired["expires_at"] == "2026-01-01T00:02:00.000+00:00", "acquire's default, held to the 120 s cap"

    renewed = renew(api, acquired["lease_id"], {})

    assert renewed.status_code == 200
    assert renewed.json()["expires_at"] == "2026-01-01T00:02:00.000+00:00"
