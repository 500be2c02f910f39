"""Fixtures for every test that talks to the service API or the engine store: a real Redis store with this
test's own key prefix and a ManualClock, keys, a client. Loaded for the whole suite by tests/conftest.py."""

import pytest
from rest_framework.test import APIClient

from apps.api import authentication
from apps.api.authentication import BadKeyGuard
from apps.apikeys.services import api_key_create
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.counters.seeding import usage_seeds
from apps.enforcement.decisions import unknown_names as names
from apps.enforcement.hybrid import counters as hybrid
from apps.enforcement.ledger.pending import decision_ledger
from apps.engine import ManualClock
from apps.engine.name_budget import MemoryNameBudget
from apps.engine.store.redis import RedisStore
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory


@pytest.fixture(autouse=True)
def _forgive_bad_keys(monkeypatch):
    """Each test starts with no address being slowed down for bad keys."""
    monkeypatch.setattr(authentication, "bad_key_guard", BadKeyGuard())


@pytest.fixture(autouse=True)
def _no_names_remembered(monkeypatch):
    """Each test starts with no new name remembered as admitted by this process (decisions/unknown_names.py)."""
    monkeypatch.setattr(names, "_remembered", set())
    monkeypatch.setattr(names, "fallback_budget", MemoryNameBudget())


@pytest.fixture(autouse=True)
def _empty_decision_ledger():
    """Each test starts with no decisions of earlier tests waiting to be written."""
    decision_ledger.discard()
    yield
    decision_ledger.discard()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start_ms=1_767_225_600_000)  # 2026-01-01T00:00:00Z


@pytest.fixture
def engine(redis_client, key_prefix, clock):
    store = RedisStore(redis_client, key_prefix=key_prefix, clock=clock)
    engine_store_use(store)
    yield store
    engine_store_use(None)


NOON_MS = 1_767_268_800_000  # 2026-01-01T12:00:00Z


@pytest.fixture
def seeded_engine(redis_client, key_prefix, clock):
    """A Redis store with the production seeder (lost durable counters are rebuilt from PostgreSQL), at noon."""
    clock.set(NOON_MS)
    store = RedisStore(redis_client, key_prefix=key_prefix, clock=clock, seeder=usage_seeds)
    engine_store_use(store)
    yield store
    engine_store_use(None)


@pytest.fixture
def service_key(db):
    return api_key_create(service=ServiceFactory(name="control-plane")).secret


@pytest.fixture
def customer_key(db):
    customer = CustomerFactory(external_id="acct-1")
    return api_key_create(service=ServiceFactory(name="tenant-app"), customer=customer).secret


def client_with(key: str | None) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


@pytest.fixture
def api(service_key, engine) -> APIClient:
    return client_with(service_key)


@pytest.fixture
def own_hybrid_counters(settings, key_prefix):
    """Hybrid counters (enforcement/hybrid/counting.py) of this test's own: its key prefix, none left from before."""
    settings.QUOTA_KEY_PREFIX = key_prefix
    hybrid.hybrid_reset()
    yield
    hybrid.hybrid_reset()
