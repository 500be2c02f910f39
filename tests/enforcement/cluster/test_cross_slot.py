"""A check that spends a per-IP limit beside a per-customer one lives on two cluster slots, which one script
cannot touch (store/cluster.py raises CrossSlotCheck before anything is counted). The API answers it through
the limits' failure policies, degraded, never with a 500, and nothing is counted for it on any master."""

from __future__ import annotations

import uuid

import pytest

from apps.engine.keys import enc
from tests.enforcement.cluster.conftest import check, keys_on_masters

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.mark.parametrize(
    ("operation", "status", "allowed"),
    [("MixedOpen", 200, True), ("MixedClosed", 503, None)],  # open admits; closed refuses with 503
)
def test_a_check_over_a_customer_and_an_ip_limit_is_answered_by_the_failure_policy_and_counts_nothing(
    cluster_platform, operation: str, status: int, allowed: bool | None
) -> None:
    customer, ip = f"mixed-{uuid.uuid4().hex[:10]}", f"198.51.100.{uuid.uuid4().int % 250 + 1}"
    body = {"customer": customer, "operation": operation, "ip": ip}

    answers = [check(url, cluster_platform.service_key, body) for url in cluster_platform.urls for _ in range(3)]

    assert [answer.status for answer in answers] == [status] * len(answers), answers[0]
    for answer in answers:
        if allowed is None:
            assert answer.body["error"]["code"] == "store_unavailable"
        else:
            assert answer.body["allowed"] is allowed
            assert answer.body["degraded"] is True
    # Nothing of this check on any node: no counter of the customer or the IP, no usage, no request id.
    keys = [key for found in keys_on_masters(cluster_platform.cluster, cluster_platform.key_prefix).values()
            for key in found]  # fmt: skip
    assert [key for key in keys if enc(customer) in key or enc(ip) in key] == []
