"""QuotaClient against a scripted transport: decoding, errors, the denial cache, failure modes, request ids,
waiting and the decorator. The same behaviour against the real server is in test_live_server.py."""

import logging

import pytest
from quota_client import (
    AccessDenied,
    ExponentialBackoff,
    InvalidRequest,
    PlatformUnavailable,
    QuotaClient,
    QuotaError,
    QuotaExceeded,
    ResponsiveBackoff,
    TransportError,
)

from tests.clients.fakes import (
    FakeClock,
    ScriptedTransport,
    allowed,
    decision_body,
    error,
    limit_entry,
    over_limit,
    respond,
)

URL = "http://quota.test"


def make_client(*answers, **options) -> tuple[QuotaClient, ScriptedTransport, FakeClock]:
    transport = ScriptedTransport(*answers)
    clock = FakeClock()
    options.setdefault("backoff", ExponentialBackoff(initial_s=0.1, max_s=5, max_retries=3))
    client = QuotaClient(URL, "qp_key.secret", transport=transport, clock=clock, sleep=clock.sleep, **options)
    return client, transport, clock


def test_a_check_posts_the_contract_fields_with_the_key_and_a_request_id() -> None:
    client, transport, _ = make_client(allowed())

    decision = client.check("acct-1", "PutRecords", resource="shard-1", costs={"records": 5, "bytes": 1024})

    sent = transport.sent[0]
    assert (sent.method, sent.url) == ("POST", f"{URL}/api/v1/check")
    assert sent.headers["Authorization"] == "Bearer qp_key.secret"
    assert sent.body == {
        "customer": "acct-1", "operation": "PutRecords", "resource": "shard-1",
        "costs": {"records": 5, "bytes": 1024}, "request_id": decision.request_id,
    }  # fmt: skip
    assert decision.allowed
    assert decision.code == "OK"
    assert len(decision.request_id) == 32
    assert decision.limits[0].name == "per-minute"


def test_each_limit_says_whose_count_it_is_and_an_older_platform_that_does_not_is_read_too() -> None:
    subject = {"customer": "acct-1", "resource": "stream-1", "attributes": {"shard": "7"}}
    named = decision_body(limits=[limit_entry(subject=subject, mode="hybrid"), limit_entry("global", subject={})])
    client, _, _ = make_client(respond(200, named), allowed())

    first, older = client.check("acct-1", "PutRecords"), client.check("acct-1", "PutRecords")

    assert [(limit.subject, limit.mode) for limit in first.limits] == [(subject, "hybrid"), ({}, "exact")]
    assert (older.limits[0].subject, older.limits[0].mode) == ({}, "exact")
    assert hash(first.limits[0])  # still a frozen value: the subject is left out of its hash


def test_an_over_limit_answer_is_a_decision_not_an_exception() -> None:
    client, _, _ = make_client(over_limit(1500))

    decision = client.check("acct-1", "ListStreams")

    assert not decision.allowed
    assert decision.code == "OVER_LIMIT"
    assert decision.retry_after_s == 1.5


@pytest.mark.parametrize(
    ("answer", "kind", "code"),
    [
        (error(400, "invalid", fields={"costs": ["bad"]}), InvalidRequest, "invalid"),
        (error(413, "batch_too_large"), InvalidRequest, "batch_too_large"),
        (error(401, "unauthenticated"), AccessDenied, "unauthenticated"),
        (error(403, "forbidden_customer"), AccessDenied, "forbidden_customer"),
        (error(429, "throttled", "Too many invalid API keys"), AccessDenied, "throttled"),
        (error(503, "store_unavailable"), PlatformUnavailable, "store_unavailable"),
        (respond(302, b"", {"location": "https://elsewhere"}), PlatformUnavailable, "unexpected_response"),
    ],
)
def test_each_refusal_of_the_request_itself_raises_its_own_error_type(answer, kind, code) -> None:
    client, _, _ = make_client(answer)

    with pytest.raises(kind) as raised:
        client.check("acct-1", "ListStreams")

    assert isinstance(raised.value, QuotaError)
    assert raised.value.code == code


def test_invalid_request_says_which_fields_are_wrong() -> None:
    client, _, _ = make_client(error(400, "invalid", "The request is not valid; see fields.", {"costs": ["bad"]}))

    with pytest.raises(InvalidRequest, match="costs") as raised:
        client.check("acct-1", "ListStreams", costs={"records": -1})

    assert raised.value.fields == {"costs": ["bad"]}


# -- the denial cache ------------------------------------------------------------------------------------------
def test_a_denial_is_answered_locally_until_its_retry_time() -> None:
    client, transport, clock = make_client(over_limit(2000), allowed())
    client.check("acct-1", "ListStreams")

    clock.advance(1.5)
    cached = client.check("acct-1", "ListStreams")
    clock.advance(0.5)
    fresh = client.check("acct-1", "ListStreams")

    assert len(transport.sent) == 2
    assert cached.from_cache
    assert not cached.allowed
    assert cached.retry_after_ms == 500
    assert fresh.allowed
    assert not fresh.from_cache


def test_a_cheaper_check_or_another_target_still_asks_the_platform() -> None:
    client, transport, _ = make_client(over_limit(2000, unit="bytes"), allowed(), allowed(), allowed())
    client.check("acct-1", "PutRecords", resource="s1", costs={"records": 1, "bytes": 5000})

    assert client.check("acct-1", "PutRecords", resource="s1", costs={"records": 9, "bytes": 9000}).from_cache
    assert client.check("acct-1", "PutRecords", resource="s1", costs={"records": 1, "bytes": 100}).allowed
    assert client.check("acct-1", "PutRecords", resource="s2", costs={"records": 1, "bytes": 5000}).allowed
    assert client.check("acct-2", "PutRecords", resource="s1", costs={"records": 1, "bytes": 5000}).allowed
    assert len(transport.sent) == 4


def test_denials_without_a_retry_time_are_not_cached() -> None:
    denied = respond(403, decision_body(False, code="DENIED", retry_after_ms=None, limits=[]))
    client, transport, _ = make_client(denied, over_limit(None), allowed())

    assert client.check("acct-1", "ListStreams").denied
    assert client.check("acct-1", "ListStreams").retry_after_ms is None
    assert client.check("acct-1", "ListStreams").allowed
    assert len(transport.sent) == 3


def test_the_cache_can_be_turned_off() -> None:
    client, transport, _ = make_client(over_limit(2000), over_limit(2000), cache_denials=False)

    client.check("acct-1", "ListStreams")
    client.check("acct-1", "ListStreams")

    assert len(transport.sent) == 2


# -- transport failures, request ids and the failure mode ------------------------------------------------------
def test_a_lost_answer_is_retried_with_the_same_request_id() -> None:
    client, transport, _ = make_client(TransportError("read timed out"), error(502, "bad_gateway"), allowed())

    decision = client.check("acct-1", "ListStreams")

    assert decision.allowed
    assert len({sent.body["request_id"] for sent in transport.sent}) == 1
    assert len(transport.sent) == 3


def test_fail_closed_raises_platform_unavailable_once_the_retries_are_spent() -> None:
    client, transport, _ = make_client(*[TransportError("connection refused")] * 3, transport_retries=2)

    with pytest.raises(PlatformUnavailable, match="did not answer") as raised:
        client.check("acct-1", "ListStreams")

    assert raised.value.code == "unreachable"
    assert len(transport.sent) == 3


def test_fail_open_admits_and_says_so_when_the_platform_is_unreachable(caplog) -> None:
    client, _, _ = make_client(*[TransportError("connection refused")] * 3, failure_mode="open")

    with caplog.at_level(logging.WARNING, logger="quota_client"):
        decision = client.check("acct-1", "ListStreams")

    assert decision.allowed
    assert decision.failed_open
    assert decision.degraded
    assert "failing open" in caplog.text


def test_fail_open_still_honours_the_platforms_own_closed_policy() -> None:
    client, _, _ = make_client(error(503, "store_unavailable", "counter store down"), failure_mode="open")

    with pytest.raises(PlatformUnavailable, match="counter store down"):
        client.check("acct-1", "ListStreams")


def test_a_real_unreachable_address_is_platform_unavailable() -> None:
    from tests.servers import free_port

    client = QuotaClient(f"http://127.0.0.1:{free_port()}", "k", timeout_s=0.5, transport_retries=0)

    with pytest.raises(PlatformUnavailable):
        client.check("acct-1", "ListStreams")
    client.close()


def test_bad_client_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="failure_mode"):
        QuotaClient(URL, "k", failure_mode="maybe")
    with pytest.raises(ValueError, match="http"):
        QuotaClient("quota.test", "k")


# -- waiting: require and the decorator ------------------------------------------------------------------------
def test_require_waits_the_advertised_time_then_passes() -> None:
    client, transport, clock = make_client(over_limit(700), over_limit(300), allowed())

    decision = client.require("acct-1", "ListStreams")

    assert decision.allowed
    assert clock.slept == [0.7, pytest.approx(0.3)]
    assert len({sent.body["request_id"] for sent in transport.sent}) == 3  # each try is a new check


def test_require_without_waiting_raises_quota_exceeded_with_the_retry_time() -> None:
    client, _, _ = make_client(over_limit(700))

    with pytest.raises(QuotaExceeded) as raised:
        client.require("acct-1", "ListStreams", wait=False)

    assert raised.value.retry_after_s == 0.7
    assert "per-minute" in str(raised.value)


def test_require_gives_up_after_the_retry_limit() -> None:
    client, transport, _ = make_client(*[over_limit(100)] * 4, cache_denials=False)

    with pytest.raises(QuotaExceeded, match="after 3 retries"):
        client.require("acct-1", "ListStreams")

    assert len(transport.sent) == 4


def test_the_default_policy_retries_five_times_at_most() -> None:
    # Seed 002: retry a throttled call 3 to 5 times at most; the default takes the upper end.
    transport = ScriptedTransport(*[over_limit(100)] * 7)
    clock = FakeClock()
    client = QuotaClient(URL, "k", transport=transport, clock=clock, sleep=clock.sleep, cache_denials=False)

    with pytest.raises(QuotaExceeded, match="after 5 retries"):
        client.require("acct-1", "ListStreams")

    assert len(transport.sent) == 6  # the first try and five retries
    assert len(clock.slept) == 5
    assert 3 <= client.backoff.max_retries <= 5


def test_require_does_not_wait_for_a_retry_time_beyond_max_wait() -> None:
    client, _, clock = make_client(over_limit(3_600_000), max_wait_s=30)

    with pytest.raises(QuotaExceeded):
        client.require("acct-1", "ModifyShardCount")

    assert clock.slept == []


def test_require_raises_access_denied_for_an_access_rule() -> None:
    denied = respond(403, decision_body(False, code="DENIED", retry_after_ms=None, limits=[]))
    client, _, _ = make_client(denied)

    with pytest.raises(AccessDenied) as raised:
        client.require("acct-1", "ListStreams")

    assert raised.value.decision is not None
    assert raised.value.decision.denied


def test_the_responsive_policy_paces_admitted_calls_while_its_interval_is_up() -> None:
    policy = ResponsiveBackoff(initial_s=0.2, up=2, randomization=0, down_after=10)
    client, _, clock = make_client(over_limit(50), allowed(), allowed(), backoff=policy, cache_denials=False)

    client.require("acct-1", "ListStreams")
    client.require("acct-1", "ListStreams")

    assert clock.slept == [0.2, 0.2, 0.2]


def test_the_decorator_checks_before_each_call_with_values_taken_from_the_arguments() -> None:
    client, transport, _ = make_client(allowed(), over_limit(None))
    calls = []

    @client.limited(
        "PutRecords",
        customer=lambda account, shard, records: account,
        resource=lambda account, shard, records: shard,
        costs=lambda account, shard, records: {"records": len(records)},
    )
    def put_records(account: str, shard: str, records: list[bytes]) -> int:
        calls.append(records)
        return len(records)

    assert put_records("acct-1", "s-1", [b"a", b"b"]) == 2
    with pytest.raises(QuotaExceeded):
        put_records("acct-1", "s-1", [b"c"])

    assert calls == [[b"a", b"b"]]
    assert transport.sent[0].body["costs"] == {"records": 2}
    assert transport.sent[0].body["resource"] == "s-1"
    assert put_records.__name__ == "put_records"


def test_the_sync_decorator_refuses_async_functions() -> None:
    client, _, _ = make_client()

    with pytest.raises(TypeError, match="AsyncQuotaClient"):

        @client.limited("ListStreams", customer="acct-1")
        async def list_streams() -> None: ...


# -- batches ---------------------------------------------------------------------------------------------------
def batch_answer(*decisions: dict):
    allowed_count = sum(d["allowed"] for d in decisions)
    body = {"allowed_count": allowed_count, "denied_count": len(decisions) - allowed_count, "results": list(decisions)}
    return respond(200, body)


def test_check_batch_sends_each_item_with_its_own_request_id_and_keeps_the_order() -> None:
    refused = decision_body(False, retry_after_ms=900, limits=[limit_entry(over=True)])
    client, transport, _ = make_client(batch_answer(decision_body(), refused, decision_body()))

    result = client.check_batch([{"customer": name, "operation": "Op"} for name in "abc"])

    body = transport.sent[0].body
    assert body["mode"] == "independent"
    assert len({item["request_id"] for item in body["items"]}) == 3
    assert (result.admitted, result.rejected, result.allowed_count, result.denied_count) == ([0, 2], [1], 2, 1)


def test_check_batch_answers_cached_denials_locally_and_sends_only_the_rest() -> None:
    client, transport, _ = make_client(over_limit(2000), batch_answer(decision_body()))
    client.check("b", "Op")

    result = client.check_batch([{"customer": "a", "operation": "Op"}, {"customer": "b", "operation": "Op"}])

    assert [item["customer"] for item in transport.sent[1].body["items"]] == ["a"]
    assert result.admitted == [0]
    assert result.decisions[1].from_cache


def test_an_atomic_batch_with_a_cached_denial_is_refused_without_a_call() -> None:
    client, transport, _ = make_client(over_limit(2000))
    client.check("b", "Op")

    result = client.check_batch([{"customer": "a", "operation": "Op"}, {"customer": "b", "operation": "Op"}],
                                mode="atomic")  # fmt: skip

    assert result.allowed_count == 0
    assert len(transport.sent) == 1


@pytest.mark.parametrize("count", [0, 1001])
def test_a_batch_outside_1_to_1000_items_is_refused_before_sending(count) -> None:
    client, transport, _ = make_client()

    with pytest.raises(InvalidRequest, match="1 to 1000"):
        client.check_batch([{"customer": "a", "operation": "Op"}] * count)

    assert transport.sent == []


def test_unknown_item_fields_are_a_type_error() -> None:
    client, _, _ = make_client()

    with pytest.raises(TypeError, match="colour"):
        client.check_batch([{"customer": "a", "operation": "Op", "colour": "red"}])


def test_an_answer_that_is_not_the_platforms_is_platform_unavailable_not_a_crash() -> None:
    html = respond(200, b"<html>welcome to nginx</html>", {"content-type": "text/html"})
    short_batch = batch_answer(decision_body())
    client, _, _ = make_client(html, short_batch)

    with pytest.raises(PlatformUnavailable, match="base_url"):
        client.check("acct-1", "ListStreams")
    with pytest.raises(PlatformUnavailable, match="does not fit"):
        client.check_batch([{"customer": "a", "operation": "Op"}, {"customer": "b", "operation": "Op"}])
