"""The SDK against the real server process (production gunicorn config) with real Redis and PostgreSQL."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest
from quota_client import (
    COST_EXCEEDS_LIMIT,
    AccessDenied,
    AsyncQuotaClient,
    CheckItem,
    ExponentialBackoff,
    InvalidRequest,
    ProducerShaper,
    PutAllResult,
    QuotaClient,
    QuotaExceeded,
    TransportError,
    Urllib3Transport,
)

from apps.usage.models import UsageMinute

# django_db: so pytest-django creates the test database the `platform` fixture configures (the tests themselves
# only speak HTTP to the server process).
pytestmark = [pytest.mark.slow, pytest.mark.django_db]


class CountingTransport(Urllib3Transport):
    """The real transport, counting requests; `lose` = request numbers whose answer is thrown away after the
    server handled them (what a client sees when its read timeout fires a moment too early)."""

    def __init__(self, lose: set[int] | None = None) -> None:
        super().__init__()
        self.count = 0
        self.lose = lose or set()
        self._lock = threading.Lock()

    def request(self, method, url, *, body, headers, timeout_s):
        with self._lock:
            self.count += 1
            number = self.count
        response = super().request(method, url, body=body, headers=headers, timeout_s=timeout_s)
        if number in self.lose:
            raise TransportError("ReadTimeoutError: read timed out (answer dropped by the test)")
        return response


def client_of(platform, key: str | None = None, **options) -> QuotaClient:
    options.setdefault("backoff", ExponentialBackoff(initial_s=0.05, max_s=1.0, max_retries=10))
    return QuotaClient(platform.url, key or platform.service_key, timeout_s=5, **options)


def remaining(platform, customer: str, operation: str = "ListStreams") -> int:
    probe = client_of(platform, cache_denials=False)
    return probe.check(customer, operation, dry_run=True).limits[0].remaining


def test_checks_count_then_refuse_and_a_refusal_is_not_asked_again_before_its_retry_time(platform) -> None:
    transport = CountingTransport()
    client = client_of(platform, transport=transport)
    customer = platform.customer()

    decisions = [client.check(customer, "ListStreams") for _ in range(6)]

    assert [d.allowed for d in decisions] == [True, True, True, False, False, False]
    refused = decisions[3]
    assert refused.code == "OVER_LIMIT"
    assert 0 < refused.retry_after_ms <= 60_000
    assert refused.limits[0].name == "list-streams"
    assert refused.limits[0].over
    assert (refused.limits[0].subject, refused.limits[0].mode) == ({"customer": customer}, "exact")
    assert [d.from_cache for d in decisions[4:]] == [True, True]
    assert transport.count == 4


def test_a_retried_check_after_a_lost_answer_is_counted_once(platform) -> None:
    client = client_of(platform, transport=CountingTransport(lose={1}))
    customer = platform.customer()

    decision = client.check(customer, "ListStreams")

    assert decision.allowed
    assert remaining(platform, customer) == 2  # limit 3: one check, however many times it was sent


def test_require_waits_for_the_token_bucket_and_then_passes(platform) -> None:
    client = client_of(platform)
    customer = platform.customer()
    client.require(customer, "Paced")

    started = time.monotonic()
    decision = client.require(customer, "Paced")
    waited = time.monotonic() - started

    assert decision.allowed
    assert 0.1 <= waited < 2.0  # 5 per second with a burst of 1: the next token comes 200 ms later


def test_each_kind_of_refusal_raises_its_own_error(platform) -> None:
    client = client_of(platform)

    with pytest.raises(InvalidRequest) as invalid:
        client.check(platform.customer(), "ListStreams", costs={"records": -1})
    assert "costs" in invalid.value.fields

    assert client.check("blocked-1", "ListStreams").denied
    with pytest.raises(AccessDenied) as denied:
        client.require("blocked-1", "ListStreams")
    assert denied.value.decision is not None

    with pytest.raises(AccessDenied) as forbidden:
        client_of(platform, platform.tenant_key).check("someone-else", "ListStreams")
    assert forbidden.value.code == "forbidden_customer"

    with pytest.raises(AccessDenied) as unauthenticated:
        client_of(platform, "qp_00000000.not-a-real-key").check("tenant-1", "ListStreams")
    assert unauthenticated.value.status == 401

    customer = platform.customer()
    for _ in range(3):
        client.require(customer, "ListStreams", wait=False)
    with pytest.raises(QuotaExceeded):
        client.require(customer, "ListStreams", wait=False)


def test_check_batch_decides_items_on_their_own_or_all_or_none(platform) -> None:
    client = client_of(platform, cache_denials=False)
    customer, other = platform.customer(), platform.customer()

    independent = client.check_batch([{"customer": customer, "operation": "ListStreams"}] * 5)
    atomic = client.check_batch(
        [{"customer": other, "operation": "ListStreams"}, {"customer": customer, "operation": "ListStreams"}],
        mode="atomic",
    )

    assert independent.admitted == [0, 1, 2]
    assert independent.rejected == [3, 4]
    assert atomic.allowed_count == 0
    assert remaining(platform, other) == 3  # the refused atomic batch consumed nothing


def usage_of(customer: str, want: dict[str, int], blocker) -> dict[str, int]:
    """What the platform counted for the customer: what its workers' ledgers wrote to PostgreSQL (every
    QUOTA_LEDGER_FLUSH_S), once it reaches `want` or 20 s passed, and then two rounds later (nothing written twice)."""

    def totals() -> dict[str, int]:
        found = {"allowed": 0, "records": 0, "bytes": 0}
        for row in UsageMinute.objects.filter(customer=customer):
            found["allowed"] += row.allowed
            found["records"] += row.costs.get("records", 0)
            found["bytes"] += row.costs.get("bytes", 0)
        return found

    deadline = time.monotonic() + 20
    with blocker.unblock():
        while totals() != want and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(4)
        return totals()


def test_put_all_pushes_every_record_through_once_even_when_answers_are_lost(platform, django_db_blocker) -> None:
    transport = CountingTransport(lose={2, 5, 9})
    client = client_of(platform, transport=transport)
    customer = platform.customer("producer")
    sizes = random.Random(7)
    items = [
        CheckItem(customer, "PutRecords", "shard-1", costs={"records": 1, "bytes": sizes.randint(100, 900)})
        for _ in range(1200)
    ]
    written: list[int] = []

    result = client.put_all(items, batch_size=400, on_admitted=written.extend)

    assert sorted(written) == list(range(1200))
    assert written == result.admitted
    total_bytes = sum(item.costs["bytes"] for item in items)
    want = {"allowed": 1200, "records": 1200, "bytes": total_bytes}
    assert usage_of(customer, want, django_db_blocker) == want
    ideal_s = max((1200 - 500) / 500, (total_bytes - 250_000) / 250_000)
    assert result.elapsed_s < ideal_s * 2 + 1  # generous here; bench/sdk measures the real margin


def test_put_all_behind_a_shaper_at_the_limit_is_hardly_ever_refused(platform, django_db_blocker) -> None:
    # The platform's PutRecords limits: 500 records/s and 250,000 bytes/s per customer and shard (conftest).
    sizes = random.Random(3)
    costs = [{"records": 1, "bytes": sizes.randint(100, 400)} for _ in range(1500)]

    def push(shaper: ProducerShaper | None) -> tuple[PutAllResult, str]:
        customer = platform.customer("shaped" if shaper else "plain")
        items = [CheckItem(customer, "PutRecords", "shard-1", costs=cost) for cost in costs]
        return client_of(platform, shaper=shaper).put_all(items, batch_size=250), customer

    plain, _ = push(None)
    shaped, customer = push(ProducerShaper({"records": 500, "bytes": 250_000}, share=1.0))

    assert plain.all_admitted
    assert shaped.all_admitted
    assert plain.resubmitted > 0
    assert shaped.resubmitted * 4 <= plain.resubmitted, (shaped.resubmitted, plain.resubmitted)
    assert shaped.shaper_waits > 0
    want = {"allowed": 1500, "records": 1500, "bytes": sum(cost["bytes"] for cost in costs)}
    assert usage_of(customer, want, django_db_blocker) == want


def test_a_lease_holds_the_slot_renews_it_and_gives_it_back_even_on_errors(platform) -> None:
    client = client_of(platform)
    customer = platform.customer()

    with client.lease(customer, "OpenSession", ttl_s=2, renew_every_s=0.2) as lease:
        with pytest.raises(QuotaExceeded):
            client.lease(customer, "OpenSession", ttl_s=2).__enter__()
        deadline = time.monotonic() + 5
        while lease.renewals < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lease.renewals >= 2
        assert lease.held
    with pytest.raises(RuntimeError), client.lease(customer, "OpenSession", ttl_s=2):
        raise RuntimeError("the job failed")

    with client.lease(customer, "OpenSession", ttl_s=2) as again:
        assert again.held


def test_the_async_client_checks_and_leases_against_the_real_server(platform) -> None:
    customer = platform.customer()

    async def scenario():
        async with AsyncQuotaClient(platform.url, platform.service_key) as client:
            results = await asyncio.gather(*(client.check(customer, "ListStreams") for _ in range(5)))
            async with client.lease(customer, "OpenSession", ttl_s=2) as lease:
                held = lease.held
            return sorted(d.allowed for d in results), held

    assert asyncio.run(scenario()) == ([False, False, True, True, True], True)


def test_a_cost_that_can_never_fit_and_unknown_names_are_told_apart(platform) -> None:
    client = client_of(platform, cache_denials=False)

    never = client.check(platform.customer(), "ListStreams", costs={"requests": 4})  # the limit holds 3
    unknown = client.check(platform.customer(), "NoSuchOperation")

    assert (never.allowed, never.code, never.retry_after_ms) == (False, COST_EXCEEDS_LIMIT, None)
    assert "can ever admit" in (never.message or "")
    assert unknown.allowed
    assert unknown.warnings == ("unknown_operation", "unknown_customer")


def test_a_request_id_reused_for_another_request_is_an_invalid_request(platform) -> None:
    client = client_of(platform)
    customer = platform.customer()
    client.check(customer, "ListStreams", request_id="once")

    with pytest.raises(InvalidRequest) as reused:
        client.check(customer, "ListStreams", costs={"requests": 2}, request_id="once")

    assert (reused.value.status, reused.value.code) == (422, "idempotency_key_reused")
