"""AsyncQuotaClient: the same surface under asyncio (HTTP in worker threads, every wait an await)."""

import asyncio

import pytest
from quota_client import AsyncQuotaClient, CheckItem, ExponentialBackoff, QuotaExceeded

from tests.clients.fakes import BucketPlatform, FakeClock, ScriptedTransport, allowed, over_limit
from tests.clients.test_lease import LEASE_ID, LeasePlatform


def async_client(transport, clock: FakeClock | None = None, **options) -> AsyncQuotaClient:
    clock = clock or FakeClock()

    async def sleep(seconds: float) -> None:
        clock.sleep(seconds)

    options.setdefault("backoff", ExponentialBackoff(initial_s=0.05, max_s=0.5))
    return AsyncQuotaClient("http://quota.test", "k", transport=transport, clock=clock, sleep=sleep, **options)


def test_check_and_require_work_the_same_under_asyncio() -> None:
    clock = FakeClock()
    transport = ScriptedTransport(allowed(), over_limit(400), allowed())

    async def scenario():
        async with async_client(transport, clock) as client:
            first = await client.check("acct-1", "ListStreams")
            second = await client.require("acct-1", "ListStreams")
            return first, second

    first, second = asyncio.run(scenario())

    assert first.allowed
    assert second.allowed
    assert clock.slept == [0.4]
    assert transport.closed


def test_the_async_decorator_raises_instead_of_calling_when_over_the_limit() -> None:
    client = async_client(ScriptedTransport(over_limit(None)))
    calls = []

    @client.limited("ListStreams", customer=lambda account: account)
    async def list_streams(account: str) -> None:
        calls.append(account)

    with pytest.raises(QuotaExceeded):
        asyncio.run(list_streams("acct-1"))
    assert calls == []


def test_async_put_all_gets_every_item_through_once() -> None:
    clock = FakeClock()
    platform = BucketPlatform(clock, {"records": (100.0, 100.0)})
    items = [CheckItem("acct-1", "PutRecords", costs={"records": 1}) for _ in range(250)]

    result = asyncio.run(async_client(platform, clock).put_all(items, batch_size=100))

    assert sorted(result.admitted) == list(range(250))
    assert platform.admitted_costs["records"] == 250


def test_an_async_lease_is_renewed_by_a_task_and_released_on_exit() -> None:
    platform = LeasePlatform()
    client = AsyncQuotaClient("http://quota.test", "k", transport=platform, transport_retries=0)

    async def scenario():
        async with client.lease("acct-1", "OpenSession", ttl_s=3, renew_every_s=0.01) as lease:
            while lease.renewals < 2:
                await asyncio.sleep(0.01)
            return lease.id

    assert asyncio.run(asyncio.wait_for(scenario(), timeout=5)) == LEASE_ID
    assert platform.calls[-1][0] == "DELETE"
