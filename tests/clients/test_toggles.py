"""QuotaClient.toggle against a scripted transport: the ETag / 304 mechanics of the toggles contract, the refresh
interval, errors keeping the last values, and one request in flight however many callers. The same against the
real server is in test_live_toggles.py."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from quota_client import AsyncQuotaClient, HttpResponse, QuotaClient, TransportError

from tests.clients.fakes import FakeClock, ScriptedTransport, error, respond

URL = "http://quota.test"


def toggles_answer(etag: str, **states: bool) -> HttpResponse:
    body = {"toggles": [{"name": name, "enabled": state} for name, state in sorted(states.items())]}
    return respond(200, body, {"etag": etag})


def not_modified() -> HttpResponse:
    return HttpResponse(304, {"etag": '"v1"'}, b"")


def make_client(*answers, **options) -> tuple[QuotaClient, ScriptedTransport, FakeClock]:
    transport, clock = ScriptedTransport(*answers), FakeClock()
    options.setdefault("transport_retries", 0)
    client = QuotaClient(URL, "qp_key.secret", transport=transport, clock=clock, sleep=clock.sleep, **options)
    return client, transport, clock


def conditions(transport: ScriptedTransport) -> list[str | None]:
    """The If-None-Match of every request sent (None: unconditional)."""
    assert {(sent.method, sent.url) for sent in transport.sent} <= {("GET", f"{URL}/api/v1/toggles")}
    return [sent.headers.get("If-None-Match") for sent in transport.sent]


def test_one_request_per_interval_a_304_keeps_the_values_and_a_200_replaces_them() -> None:
    client, transport, clock = make_client(
        toggles_answer('"v1"', new_checkout=True, dark_mode=False),
        not_modified(),
        toggles_answer('"v2"', dark_mode=True),
    )

    first = [client.toggle("new_checkout"), client.toggle("dark_mode", True), client.toggle("new_checkout")]
    clock.advance(29.9)
    still = client.toggle("new_checkout")
    clock.advance(0.1)
    after_304 = client.toggle("new_checkout")
    clock.advance(30)
    after_change = [client.toggle("new_checkout"), client.toggle("dark_mode")]

    assert first == [True, False, True]
    assert still is True
    assert after_304 is True
    assert after_change == [False, True]  # new_checkout is gone from the document: the default
    assert conditions(transport) == [None, '"v1"', '"v1"']
    assert client.toggles() == {"dark_mode": True}


def test_an_unknown_name_reads_as_the_default() -> None:
    client, _, _ = make_client(toggles_answer('"v1"', known=True))

    assert client.toggle("unknown") is False
    assert client.toggle("unknown", True) is True
    assert client.toggle("known", False) is True


@pytest.mark.parametrize(
    "failure",
    [
        TransportError("ConnectTimeoutError"),
        error(500, "server_error"),
        error(401, "invalid_api_key"),
        error(404, "not_found"),
        respond(200, {"toggles": "nope"}, {"etag": '"v9"'}),
        respond(200, b"<html>", {"etag": '"v9"'}),
    ],
)
def test_a_failed_refresh_keeps_the_last_values_and_waits_a_full_interval(failure, caplog) -> None:
    client, transport, clock = make_client(toggles_answer('"v1"', beta=True), failure, not_modified())
    client.toggle("beta")
    clock.advance(30)

    with caplog.at_level(logging.WARNING, logger="quota_client"):
        during = client.toggle("beta")
    clock.advance(10)
    unchanged = client.toggle("beta")
    clock.advance(20)
    again = client.toggle("beta")

    assert [during, unchanged, again] == [True, True, True]
    assert "Could not refresh the feature toggles" in caplog.text
    assert conditions(transport) == [None, '"v1"', '"v1"']  # a broken 200 did not replace the ETag either


def test_before_any_successful_answer_every_name_reads_as_the_default() -> None:
    client, transport, clock = make_client(error(503, "store_unavailable"), toggles_answer('"v1"', beta=True))

    assert [client.toggle("beta"), client.toggle("beta", True)] == [False, True]
    clock.advance(30)
    assert client.toggle("beta") is True
    assert conditions(transport) == [None, None]


def test_a_zero_interval_asks_on_every_call_conditionally() -> None:
    client, transport, _ = make_client(toggles_answer('"v1"', beta=True), not_modified(), toggle_refresh_s=0)

    assert [client.toggle("beta"), client.toggle("beta")] == [True, True]
    assert conditions(transport) == [None, '"v1"']


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="toggle_refresh_s"):
        QuotaClient(URL, "k", toggle_refresh_s=-1)


class GatedTransport(ScriptedTransport):
    """Holds every request until `gate` opens, counting how many were sent meanwhile."""

    def __init__(self, *answers) -> None:
        super().__init__(*answers)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def request(self, method, url, *, body, headers, timeout_s):
        self.entered.set()
        assert self.gate.wait(5)
        return super().request(method, url, body=body, headers=headers, timeout_s=timeout_s)


def test_many_threads_send_one_request_and_read_the_cache_meanwhile() -> None:
    transport = GatedTransport(toggles_answer('"v1"', beta=True))
    client = QuotaClient(URL, "k", transport=transport, transport_retries=0)
    refresher = threading.Thread(target=client.toggle, args=("beta",))
    refresher.start()
    assert transport.entered.wait(5)

    meanwhile = []
    readers = [threading.Thread(target=lambda: meanwhile.append(client.toggle("beta", False))) for _ in range(50)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(5)
    transport.gate.set()
    refresher.join(5)

    assert meanwhile == [False] * 50  # nothing known yet: the default, without waiting and without a request
    assert client.toggle("beta") is True
    assert len(transport.sent) == 1


def test_the_async_twin_shares_the_mechanics_and_refreshes_off_the_event_loop() -> None:
    clock = FakeClock()
    transport = GatedTransport(toggles_answer('"v1"', beta=True), not_modified())

    async def scenario() -> tuple[list[bool], list[bool]]:
        client = AsyncQuotaClient(URL, "k", transport=transport, clock=clock, transport_retries=0)
        refreshing = asyncio.create_task(client.toggle("beta"))
        await asyncio.to_thread(transport.entered.wait, 5)
        # The event loop is free while the refresh waits: other callers get the cache (the default, so far).
        meanwhile = [await client.toggle("beta"), await client.toggle("beta", True)]
        transport.gate.set()
        first = await refreshing
        clock.advance(30)
        return meanwhile, [first, await client.toggle("beta"), await client.toggle("beta")]

    meanwhile, after = asyncio.run(asyncio.wait_for(scenario(), timeout=10))

    assert meanwhile == [False, True]
    assert after == [True, True, True]
    assert conditions(transport) == [None, '"v1"']
