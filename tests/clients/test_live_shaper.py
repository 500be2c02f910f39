"""The SDK against the real server's leaky-bucket shaper (issue 18 item 4a): `max_wait_ms` admits with
`delay_ms`, and the client's sleeping those delays spaces the work at the limit's rate.

The `shaped` limit of conftest.py: 5 per second with room for 1, so one request leaves every 200 ms.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from quota_client import AsyncQuotaClient, QuotaClient

# django_db: so pytest-django creates the test database the `platform` fixture configures.
pytestmark = [pytest.mark.slow, pytest.mark.django_db]
SPACING_MS = 200


def client_of(platform) -> QuotaClient:
    return QuotaClient(platform.url, platform.service_key, timeout_s=5, cache_denials=False)


def test_checks_within_their_wait_are_admitted_with_growing_delays_and_the_rest_refused(platform) -> None:
    client, customer = client_of(platform), platform.customer("shaped")

    decisions = [client.check(customer, "Shaped", max_wait_ms=1000, sleep_delay=False) for _ in range(9)]

    admitted = [d for d in decisions if d.allowed]
    delays = [d.delay_ms for d in admitted]
    assert decisions[0].delay_ms == 0
    assert 6 <= len(admitted) <= 7  # 0, ~200, ... up to 1000 ms of queue (the calls themselves take a little)
    assert all(0 < later - earlier <= SPACING_MS for earlier, later in zip(delays, delays[1:], strict=False))
    assert delays[-1] <= 1000
    refused = decisions[len(admitted) :]
    assert refused
    assert all(not d.allowed and d.delay_ms == 0 and d.retry_after_ms for d in refused)


def test_without_a_wait_the_shaper_refuses_what_does_not_fit_now(platform) -> None:
    client, customer = client_of(platform), platform.customer("shaped")

    first, second = client.check(customer, "Shaped"), client.check(customer, "Shaped")

    assert (first.allowed, first.delay_ms) == (True, 0)
    assert not second.allowed
    assert 0 < second.retry_after_ms <= SPACING_MS


def test_check_sleeps_each_delay_so_admitted_calls_leave_at_the_rate(platform) -> None:
    client, customer = client_of(platform), platform.customer("shaped")
    start = time.monotonic()

    decisions = [client.check(customer, "Shaped", max_wait_ms=1000) for _ in range(5)]

    elapsed_ms = (time.monotonic() - start) * 1000
    assert all(d.allowed for d in decisions)
    assert elapsed_ms >= 4 * SPACING_MS - 20  # four gaps of 200 ms after the first, each slept by the client
    assert all(d.delay_ms <= SPACING_MS for d in decisions)  # each call waited out its own place in the queue


def test_require_and_the_async_client_wait_their_delays_too(platform) -> None:
    customer = platform.customer("shaped")
    start = time.monotonic()
    client_of(platform).require(customer, "Shaped", max_wait_ms=1000)
    client_of(platform).require(customer, "Shaped", max_wait_ms=1000)

    async def scenario() -> None:
        async with AsyncQuotaClient(platform.url, platform.service_key, cache_denials=False) as client:
            await client.check(customer, "Shaped", max_wait_ms=1000)
            await client.require(customer, "Shaped", max_wait_ms=1000)

    asyncio.run(scenario())

    assert (time.monotonic() - start) * 1000 >= 3 * SPACING_MS - 20
