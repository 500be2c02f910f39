"""QuotaClient.toggle against the real server process (issue 18 item 1): the platform's ETag and 304 as the SDK
uses them, a change seen within one refresh, one request per interval, and what a customer-bound key sees.

Toggles are written and committed outside the test's transaction (the server reads them from the database
when the config version moves), under names of each test's own, and deleted afterwards.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from quota_client import AsyncQuotaClient, QuotaClient, Urllib3Transport

# django_db: so pytest-django creates the test database the `platform` fixture configures.
pytestmark = [pytest.mark.slow, pytest.mark.django_db]
R = TypeVar("R")


def committed(django_db_blocker, work: Callable[[], R]) -> R:
    """Run `work` on a connection of its own (a new thread's, in autocommit), so the server process sees it;
    the test's own connection is inside the transaction pytest-django rolls back."""
    from django.db import connection

    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(work())
        except Exception as error:  # handed to the test's thread
            outcome.append(error)
        finally:
            connection.close()

    with django_db_blocker.unblock():
        thread = threading.Thread(target=run)
        thread.start()
        thread.join(30)
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


class RecordingTransport(Urllib3Transport):
    """The real transport, keeping (If-None-Match sent, status received) of every request."""

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[tuple[str | None, int]] = []
        self._lock = threading.Lock()

    def request(self, method, url, *, body, headers, timeout_s):
        response = super().request(method, url, body=body, headers=headers, timeout_s=timeout_s)
        with self._lock:
            self.exchanges.append((headers.get("If-None-Match"), response.status))
        return response


@pytest.fixture
def toggles(platform, django_db_blocker) -> Iterator[Callable[..., str]]:
    """make(enabled, customer=None) -> a new toggle's name; set(name, enabled) changes it. Committed at once."""
    from apps.customers.models import Customer
    from apps.toggles.models import FeatureToggle

    made: list[str] = []

    def make(enabled: bool, customer: str | None = None) -> str:
        name = f"sdk-{uuid.uuid4().hex[:10]}"

        def create() -> None:
            owner = Customer.objects.get(external_id=customer) if customer else None
            FeatureToggle.objects.create(name=name, enabled=enabled, customer=owner)

        committed(django_db_blocker, create)
        made.append(name)
        return name

    def set_state(name: str, enabled: bool) -> None:
        def update() -> None:
            toggle = FeatureToggle.objects.get(name=name)
            toggle.enabled = enabled
            toggle.save()

        committed(django_db_blocker, update)

    make.set = set_state  # type: ignore[attr-defined]
    yield make
    committed(django_db_blocker, lambda: [toggle.delete() for toggle in FeatureToggle.objects.filter(name__in=made)])


# Each server worker polls the config version every 0.5 s: after one worker shows a change, the others have it
# within this, so every later answer agrees whichever worker gives it.
SETTLE_S = 1.5


def until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """True once the predicate holds (then waits for every server worker to agree); False after the timeout."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    time.sleep(SETTLE_S)
    return True


def test_a_toggle_reads_through_etag_and_304_and_a_change_arrives_with_a_new_etag(platform, toggles) -> None:
    name = toggles(True)
    transport = RecordingTransport()
    client = QuotaClient(platform.url, platform.service_key, transport=transport, toggle_refresh_s=0)

    assert until(lambda: client.toggle(name, False))  # the server sees it once its config version moved
    assert client.toggle(name, False) is True
    first_etag, status = transport.exchanges[-1]
    assert first_etag is not None
    assert status == 304  # the unchanged document is not sent again
    toggles.set(name, False)
    assert until(lambda: client.toggle(name, True) is False)
    assert transport.exchanges[-1] == (first_etag, 200)  # the change comes as a new body ...
    assert client.toggle(name, True) is False

    new_etag, status = transport.exchanges[-1]
    assert (status, new_etag != first_etag) == (304, True)  # ... with a new ETag, which the next request sends
    assert client.toggle(f"{name}-missing", True) is True


def test_one_request_per_refresh_interval_however_many_reads(platform, toggles) -> None:
    name = toggles(True)
    transport = RecordingTransport()
    client = QuotaClient(platform.url, platform.service_key, transport=transport, toggle_refresh_s=30)
    assert until(lambda: name in QuotaClient(platform.url, platform.service_key).toggles())

    readers = [threading.Thread(target=lambda: [client.toggle(name) for _ in range(50)]) for _ in range(8)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(10)

    assert len(transport.exchanges) == 1
    assert client.toggle(name) is True


def test_a_customer_bound_key_sees_its_customers_toggles_and_not_anothers(platform, toggles) -> None:
    own, other, shared = toggles(True, customer="tenant-1"), toggles(True, customer="blocked-1"), toggles(True)
    tenant = QuotaClient(platform.url, platform.tenant_key, toggle_refresh_s=0)
    service = QuotaClient(platform.url, platform.service_key, toggle_refresh_s=0)

    assert until(lambda: {own, other, shared} <= set(service.toggles()))
    seen = tenant.toggles()

    assert own in seen
    assert shared in seen
    assert other not in seen
    assert tenant.toggle(other, False) is False


def test_the_async_client_reads_the_same_toggles(platform, toggles) -> None:
    name = toggles(True)
    assert until(lambda: name in QuotaClient(platform.url, platform.service_key).toggles())

    async def scenario() -> list[bool]:
        async with AsyncQuotaClient(platform.url, platform.service_key) as client:
            return [await client.toggle(name), await client.toggle("no-such-toggle", True)]

    assert asyncio.run(scenario()) == [True, True]
