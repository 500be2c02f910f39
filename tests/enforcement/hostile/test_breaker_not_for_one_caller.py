"""Finding 2 of the trust boundary (its second half): one caller's failing or expensive requests never open the
circuit breaker for everybody. The breaker opens only when Redis itself does not answer (a PING within the
timeout), not because some calls failed for reasons of their own.

Real Redis: customer "bad"'s counter is made unusable (a key of the garbage, as an operator's mistake or a
corrupt key would be), so each of its checks fails in Redis with WRONGTYPE; the other customers' checks must still be
decided by Redis (not degraded).
"""

from __future__ import annotations

import pytest

from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import CLOSED
from apps.limits.models import StoreFailurePolicy
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def fresh_breaker(monkeypatch):
    """The production breaker (threshold and open period from the settings), closed."""
    monkeypatch.setattr(store, "redis_breaker", store.new_breaker())


def test_a_customer_whose_checks_fail_in_redis_does_not_send_the_others_to_their_failure_policy(
    api, engine, redis_client, fresh_breaker
) -> None:
    LimitFactory(
        name="hourly", operation=OperationFactory(name="Op"), quantity=100, period_seconds=3600,
        on_store_failure=StoreFailurePolicy.OPEN, key_by=["customer"],
    )  # fmt: skip
    assert api.post("/api/v1/check", {"customer": "bad", "operation": "Op"}, format="json").status_code == 200
    (counter,) = list(redis_client.scan_iter(f"{engine.key_prefix}:c:{{c=bad}}:*"))
    redis_client.set(counter, "not:numbers", keepttl=True)  # every check of "bad" now fails inside Redis

    failing = [api.post("/api/v1/check", {"customer": "bad", "operation": "Op"}, format="json") for _ in range(10)]
    others = [api.post("/api/v1/check", {"customer": f"good-{n}", "operation": "Op"}, format="json") for n in range(5)]

    assert all(answer.json()["degraded"] for answer in failing)  # its own policy answers for it
    assert [answer.json()["degraded"] for answer in others] == [False] * 5
    assert store.redis_breaker.state == CLOSED
