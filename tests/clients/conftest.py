"""One real platform for the SDK's slow tests: the production gunicorn config on the test database and Redis.

It is started once for this folder (about 2 s) rather than per test. Its configuration is committed outside
any test transaction, so the fixture removes it afterwards the way pytest-django's transactional tests do
(flush), and deletes its Redis keys. Tests keep out of each other's way by using customers of their own.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis

from tests.support.database import database_flush
from tests.support.live_server import LiveServer

PLATFORM_YAML = """
operations:
  - {name: ListStreams}
  - {name: Paced}
  - {name: OpenSession}
  - {name: PutRecords}
  - {name: ReadItems}
  - {name: OncePerSecond}
  - {name: LocalHot}
  - {name: Shaped}
customers:
  - {id: tenant-1}
  - {id: blocked-1}
limits:
  - {name: list-streams, operation: ListStreams, algorithm: fixed_window, limit: 3, period: minute, key_by: [customer]}
  - {name: paced, operation: Paced, algorithm: token_bucket, limit: 5, period: second, burst: 1, key_by: [customer]}
  - {name: sessions, operation: OpenSession, algorithm: concurrency, limit: 1, period: minute, key_by: [customer]}
  - {name: records, operation: PutRecords, algorithm: token_bucket, limit: 500, period: second, unit: records,
     key_by: [customer, resource]}
  - {name: bytes, operation: PutRecords, algorithm: token_bucket, limit: 250000, period: second, unit: bytes,
     key_by: [customer, resource]}
  - {name: read-items, operation: ReadItems, algorithm: fixed_window, limit: 5, period: 2, key_by: [customer]}
  - {name: once-per-second, operation: OncePerSecond, algorithm: fixed_window, limit: 1, period: second,
     key_by: [customer]}
  - {name: local-hot, operation: LocalHot, algorithm: fixed_window, limit: 50, period: hour, key_by: [customer],
     sync_ms: 100}
  - {name: shaped, operation: Shaped, algorithm: leaky_bucket, limit: 5, period: second, burst: 1, key_by: [customer]}
access_rules:
  - {action: deny, customer: blocked-1, reason: SDK tests}
services:
  - {name: sdk-tests, operations: []}
"""
# /api/v1/authz (nginx auth_request): GET /items and below is the ReadItems operation.
AUTHZ_ROUTES = [{"method": "GET", "path": "/items(/.*)?", "operation": "ReadItems"}]


@dataclass(frozen=True)
class Platform:
    url: str
    service_key: str  # may check any customer
    tenant_key: str  # bound to customer tenant-1
    redis_url: str
    key_prefix: str

    @staticmethod
    def customer(label: str = "c") -> str:
        """A customer of the calling test's own (counters start empty)."""
        return f"{label}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="package")
def platform(django_db_setup, django_db_blocker, redis_url, tmp_path_factory) -> Iterator[Platform]:
    from apps.apikeys.models import Service
    from apps.apikeys.services import api_key_create
    from apps.customers.models import Customer
    from apps.limits.config_io import config_import, config_yaml_load

    key_prefix = f"test-sdk-{uuid.uuid4().hex[:10]}"
    with django_db_blocker.unblock():
        config_import(document=config_yaml_load(PLATFORM_YAML))
        service = Service.objects.get(name="sdk-tests")
        service_key = api_key_create(service=service).secret
        tenant_key = api_key_create(service=service, customer=Customer.objects.get(external_id="tenant-1")).secret
    env = {
        "QUOTA_AUTHZ_ROUTES": json.dumps(AUTHZ_ROUTES),
        # No background writes to the test database behind the tests' back.
        "QUOTA_BOOKKEEPING_FLUSH_S": "0",
        "QUOTA_HEARTBEAT_S": "0",
    }
    try:
        tmp = tmp_path_factory.mktemp("platform")
        with LiveServer(tmp, redis_url=redis_url, key_prefix=key_prefix, workers=2, **env) as server:
            yield Platform(server.url, service_key, tenant_key, redis_url, key_prefix)
    finally:
        with django_db_blocker.unblock():
            database_flush()
        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(match=f"{key_prefix}*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()
