"""Two API processes on two ports share one Redis Cluster: one limit is enforced exactly, not split per process,
and the usage flushed to PostgreSQL is the usage the servers counted."""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.enforcement.cluster.conftest import LIMIT_SHARED, check
from tests.usage.written import usage_written

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

CHECKS = 3 * LIMIT_SHARED
THREADS = 24
HOUR_S = 3600


def wait_for_a_fresh_window(period_s: int, margin_s: float) -> None:
    """Sleep past the end of the current epoch-aligned window when it ends within `margin_s`: the checks must
    all fall in one window for "exactly the limit" to hold."""
    left = period_s - time.time() % period_s
    if left < margin_s:
        time.sleep(left + 0.1)


def test_two_processes_on_the_cluster_admit_exactly_the_limit_and_flush_what_they_counted(
    cluster_platform, counters_store
) -> None:
    customer = "cluster-shared-1"
    wait_for_a_fresh_window(HOUR_S, margin_s=30)
    bodies = [(cluster_platform.urls[n % 2], {"customer": customer, "operation": "Shared"}) for n in range(CHECKS)]

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        answers = list(pool.map(lambda pair: check(pair[0], cluster_platform.service_key, pair[1]), bodies))

    statuses = Counter(answer.status for answer in answers)
    unexpected = [answer for answer in answers if answer.status not in (200, 429)]
    assert statuses == {200: LIMIT_SHARED, 429: CHECKS - LIMIT_SHARED}, unexpected
    assert all(answer.body["degraded"] is False for answer in answers)
    # Both processes answered half the checks: the one limit held across them, not one limit per process.
    by_server = Counter(url for (url, _), answer in zip(bodies, answers, strict=True) if answer.status)
    assert by_server == {cluster_platform.urls[0]: CHECKS // 2, cluster_platform.urls[1]: CHECKS // 2}

    # Each server's ledger writes what it counted (every QUOTA_LEDGER_FLUSH_S), exactly once.
    want = {"allowed": LIMIT_SHARED, "denied": CHECKS - LIMIT_SHARED}
    assert usage_written(want, customer=customer, operation="Shared") == want
    # Redis keeps counters only: no usage waits on any master.
    assert counters_store.usage_minutes() == []
