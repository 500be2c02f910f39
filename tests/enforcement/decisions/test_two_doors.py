"""The two doors of the decision core answer alike: the same generated requests, valid and hostile, sent to the
production Django handler of the service API (its middleware, DRF's view) and to the lean WSGI door get the same
status, the same headers and the same body, byte for byte.

Each door keeps its own world, so the second request meets the state the first one met: its own counters (a
Redis key prefix of its own, one clock for both), its own bad-key guard (one frozen clock) and its own memory of
new names. Real PostgreSQL and Redis.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from apps.api import authentication
from apps.api.authentication import BadKeyGuard
from apps.apikeys.services import api_key_create
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.decisions import parsing
from apps.enforcement.decisions import unknown_names as names
from apps.engine.name_budget import MemoryNameBudget
from apps.engine.store.redis import RedisStore
from quota_platform import lean_door, wsgi
from tests.api_doors import wsgi_call, wsgi_environ
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db
RUN_THROUGH_BOTH_DOORS = False  # both doors are called here, side by side
BODY_LIMIT = 2048  # DATA_UPLOAD_MAX_MEMORY_SIZE here: an oversized body costs little to make
BATCH_LIMIT = 4  # MAX_BATCH_ITEMS here

texts = st.sampled_from(["acct-1", "acct-2", "Op", "Other", "", "x" * 201, "a\x00b", "ünï", "(other)"])
numbers = st.one_of(
    st.integers(-5, 10),
    st.sampled_from([2**53, 2**53 - 1, 2**64, 10**400, 1.5, 2.0, -0.0, 1e308, True, "5"]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3))
check_fields = {
    "customer": st.sampled_from(["acct-1", "acct-2"]) | values,
    "operation": st.sampled_from(["Op", "Other"]) | values,
    "resource": st.sampled_from(["r1", "r2"]) | values,
    "costs": st.dictionaries(st.sampled_from(["requests", "bytes", "bad unit", ""]), numbers, max_size=3) | values,
    "ip": st.sampled_from(["203.0.113.9", "::ffff:203.0.113.9", "fe80::1%eth0", "2001:DB8::1", "nope"]) | values,
    "request_id": st.sampled_from(["rid-1", "rid-2"]) | values,
    "dry_run": st.booleans() | values,
    "max_wait_ms": numbers,
    "attributes": st.dictionaries(st.sampled_from(["tier", "bad name", "x"]), texts | numbers, max_size=3),
    "unknown": values,
}
valid_checks = st.fixed_dictionaries(
    {"customer": st.sampled_from(["acct-1", "acct-2"]), "operation": st.sampled_from(["Op", "Other"])},
    optional={"resource": st.sampled_from(["r1", "r2"]), "dry_run": st.booleans(), "request_id": st.just("rid-1")},
)
checks = st.one_of(
    valid_checks,
    valid_checks,
    st.fixed_dictionaries(
        {"customer": st.sampled_from(["acct-1", "acct-2"]), "operation": st.sampled_from(["Op", "Other"])},
        optional={name: check_fields[name] for name in ("resource", "costs", "request_id", "dry_run", "ip")},
    ),
    st.fixed_dictionaries({}, optional=check_fields),
    values,
)
batches = st.one_of(
    st.fixed_dictionaries(
        {"items": st.lists(valid_checks, min_size=1, max_size=BATCH_LIMIT)},
        optional={"mode": st.sampled_from(["independent", "atomic"])},
    ),
    st.fixed_dictionaries(
        {"items": st.lists(valid_checks, max_size=BATCH_LIMIT) | st.lists(checks, max_size=BATCH_LIMIT + 1)},
        optional={"mode": st.sampled_from(["independent", "atomic", "all"]) | values, "extra": values},
    ),
    values,
)


def encoded(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()  # the standard library: it writes ints of any size


def bodies(shapes: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    hostile = st.one_of(
        st.binary(max_size=40),  # mostly not JSON, sometimes not even UTF-8
        st.sampled_from([b"", b"{", b"[]", b"null", b'{"customer": "acct-1",}', b"\xff\xfe{}", b"1e999999"]),
        shapes.map(lambda value: b" " * BODY_LIMIT + encoded(value)),  # over the size limit
    )
    return st.one_of(shapes.map(encoded), shapes.map(encoded), shapes.map(encoded), hostile)


# Mostly requests that get past authentication and the body's type, so the checks themselves are compared.
requests = st.tuples(
    st.sampled_from(["/api/v1/check", "/api/v1/check/batch"]),
    st.sampled_from(["service"] * 8 + ["bound"] * 4 + [None, "Basic abc", "Bearer", "Bearer " + "k" * 201, "Bearer x"]),
    st.sampled_from(["application/json"] * 10 + ["application/json; charset=utf-8", "text/plain", ""]),
    st.data(),
)


class World:
    """What one door's requests change and read back: counters, the bad-key guard, new names remembered."""

    def __init__(self, redis_client, clock) -> None:
        self.prefix = f"test-door-{uuid.uuid4().hex[:12]}"
        self.store = RedisStore(redis_client, key_prefix=self.prefix, clock=clock)
        self.guard = BadKeyGuard(limit=3, window_s=60, clock=lambda: 1000.0)
        self.remembered: set[tuple[int, str, str]] = set()
        self.budget = MemoryNameBudget()

    @contextlib.contextmanager
    def entered(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        engine_store_use(self.store)
        monkeypatch.setattr(authentication, "bad_key_guard", self.guard)
        monkeypatch.setattr(names, "_remembered", self.remembered)
        monkeypatch.setattr(names, "fallback_budget", self.budget)
        try:
            yield
        finally:
            engine_store_use(None)


@pytest.fixture
def setup(redis_client, clock, settings, monkeypatch):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = BODY_LIMIT
    monkeypatch.setattr(parsing, "MAX_BATCH_ITEMS", BATCH_LIMIT)
    operation = OperationFactory(name="Op")
    LimitFactory(name="few", operation=operation, algorithm="fixed_window", quantity=3, key_by=["customer"])
    LimitFactory(name="bucket", operation=operation, algorithm="token_bucket", quantity=5, key_by=["resource"])
    customer = CustomerFactory(external_id="acct-1")
    keys = {
        "service": api_key_create(service=ServiceFactory(name="backend")).secret,
        "bound": api_key_create(service=ServiceFactory(name="tenant"), customer=customer).secret,
    }
    # Django's door as production builds it (quota_platform/wsgi.py), with this test's settings.
    django_door = wsgi.ServiceApiHandler()
    worlds = {"django": World(redis_client, clock), "lean": World(redis_client, clock)}
    yield keys, django_door, worlds
    for world in worlds.values():
        keys_left = list(redis_client.scan_iter(match=f"{world.prefix}*", count=1000))
        if keys_left:
            redis_client.delete(*keys_left)


def lean_application(environ, start_response):
    answered = lean_door.application(environ, start_response)
    assert answered is not None, "the lean door passed a request on to Django"
    return answered


@examples(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=requests)
def test_both_doors_answer_every_request_alike(setup, monkeypatch, sent) -> None:
    keys, django_door, worlds = setup
    path, auth, content_type, data = sent
    body = data.draw(bodies(batches if path.endswith("batch") else checks), label="body")
    headers = {"Content-Type": content_type} if content_type else {}
    if auth is not None:
        headers["Authorization"] = f"Bearer {keys[auth]}" if auth in keys else auth

    answers = {}
    for name, app in (("django", django_door), ("lean", lean_application)):
        with worlds[name].entered(monkeypatch):
            answers[name] = wsgi_call(app, wsgi_environ(path, body, headers=headers))

    django, lean = answers["django"], answers["lean"]
    assert (lean.status, lean.reason) == (django.status, django.reason), (django.body, lean.body)
    assert lean.body == django.body
    assert dict(lean.headers) == dict(django.headers)
    assert django.header("Content-Type") == "application/json"
