"""The SDK side of the leaky-bucket shaper (issue 18 item 4a) against a scripted transport: `max_wait_ms` is sent,
an admission's `delay_ms` is slept (awaited in the async client) before the call returns, or only reported."""

from __future__ import annotations

import asyncio

from quota_client import AsyncQuotaClient, CheckItem, QuotaClient

from tests.clients.fakes import FakeClock, ScriptedTransport, decision_body, over_limit, respond

URL = "http://quota.test"


def shaped(delay_ms: int | None) -> object:
    extra = {} if delay_ms is None else {"delay_ms": delay_ms}
    return respond(200, decision_body(True, **extra))


def make_client(*answers, **options) -> tuple[QuotaClient, ScriptedTransport, FakeClock]:
    transport, clock = ScriptedTransport(*answers), FakeClock()
    client = QuotaClient(URL, "k", transport=transport, clock=clock, sleep=clock.sleep, **options)
    return client, transport, clock


def test_max_wait_ms_is_sent_and_the_admissions_delay_is_slept_before_returning() -> None:
    client, transport, clock = make_client(shaped(250))

    decision = client.check("acct-1", "PutRecords", max_wait_ms=1000)

    assert transport.sent[0].body["max_wait_ms"] == 1000
    assert (decision.allowed, decision.delay_ms, decision.delay_s) == (True, 250, 0.25)
    assert clock.slept == [0.25]


def test_sleep_delay_false_only_reports_the_delay() -> None:
    client, _, clock = make_client(shaped(250))

    decision = client.check("acct-1", "PutRecords", max_wait_ms=1000, sleep_delay=False)

    assert decision.delay_ms == 250
    assert clock.slept == []


def test_no_max_wait_sends_no_field_and_an_answer_without_delay_sleeps_nothing() -> None:
    client, transport, clock = make_client(shaped(None), shaped(0))

    first = client.check("acct-1", "PutRecords")
    second = client.check("acct-1", "PutRecords", max_wait_ms=0)

    assert "max_wait_ms" not in transport.sent[0].body
    assert transport.sent[1].body["max_wait_ms"] == 0
    assert (first.delay_ms, second.delay_ms) == (0, 0)
    assert clock.slept == []


def test_a_refusal_is_never_slept_even_if_it_carries_a_delay() -> None:
    refused = respond(429, decision_body(False, retry_after_ms=900, delay_ms=400))
    client, _, clock = make_client(refused)

    decision = client.check("acct-1", "PutRecords", max_wait_ms=100)

    assert not decision.allowed
    assert clock.slept == []


def test_require_retries_a_refusal_then_sleeps_the_admissions_delay() -> None:
    client, transport, clock = make_client(over_limit(300), shaped(120), cache_denials=False)

    decision = client.require("acct-1", "PutRecords", max_wait_ms=200)

    assert [sent.body["max_wait_ms"] for sent in transport.sent] == [200, 200]
    assert transport.sent[0].body["request_id"] != transport.sent[1].body["request_id"]
    assert decision.delay_ms == 120
    assert clock.slept[-1] == 0.12
    assert len(clock.slept) == 2


def test_a_cached_refusal_answers_only_checks_with_the_same_max_wait() -> None:
    client, transport, _ = make_client(over_limit(5000), shaped(800))

    client.check("acct-1", "PutRecords", max_wait_ms=100)
    cached = client.check("acct-1", "PutRecords", max_wait_ms=100)
    longer = client.check("acct-1", "PutRecords", max_wait_ms=1000, sleep_delay=False)

    assert cached.from_cache
    assert (longer.allowed, longer.delay_ms) == (True, 800)  # a longer wait may be admitted: it was asked
    assert len(transport.sent) == 2


def test_batch_items_carry_their_max_wait_and_report_delays_without_sleeping() -> None:
    results = [decision_body(True, delay_ms=0), decision_body(True, delay_ms=50)]
    answer = respond(200, {"allowed_count": 2, "denied_count": 0, "results": results})
    client, transport, clock = make_client(answer)

    batch = client.check_batch([CheckItem("acct-1", "PutRecords"), {"customer": "acct-1", "operation": "PutRecords",
                                                                     "max_wait_ms": 100}])  # fmt: skip

    assert ["max_wait_ms" in item for item in transport.sent[0].body["items"]] == [False, True]
    assert [d.delay_ms for d in batch.decisions] == [0, 50]
    assert clock.slept == []


def test_the_decorator_passes_max_wait_and_waits_before_calling() -> None:
    client, transport, clock = make_client(shaped(75))
    calls = []

    @client.limited("PutRecords", customer="acct-1", max_wait_ms=500)
    def put() -> None:
        calls.append(list(clock.slept))

    put()

    assert transport.sent[0].body["max_wait_ms"] == 500
    assert calls == [[0.075]]  # the function ran after the delay


def test_the_async_client_awaits_the_delay_and_can_only_report_it() -> None:
    clock = FakeClock()
    transport = ScriptedTransport(shaped(300), shaped(40), shaped(60))

    async def sleep(seconds: float) -> None:
        clock.sleep(seconds)

    async def scenario():
        client = AsyncQuotaClient(URL, "k", transport=transport, clock=clock, sleep=sleep)
        waited = await client.check("acct-1", "PutRecords", max_wait_ms=1000)
        reported = await client.check("acct-1", "PutRecords", max_wait_ms=1000, sleep_delay=False)
        required = await client.require("acct-1", "PutRecords", max_wait_ms=1000)
        return waited, reported, required

    waited, reported, required = asyncio.run(scenario())

    assert [waited.delay_ms, reported.delay_ms, required.delay_ms] == [300, 40, 60]
    assert clock.slept == [0.3, 0.06]
    assert [sent.body["max_wait_ms"] for sent in transport.sent] == [1000, 1000, 1000]
