"""Forward-auth for gateways: operation from method + path, customer from a header or the key."""

import json

import pytest

from apps.enforcement.gateway.authz import _routes
from tests.api_fixtures import client_with
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db

ROUTES = [
    {"method": "POST", "path": "/streams/(?P<resource>[^/]+)/shards", "operation": "ModifyShardCount"},
    {"method": "*", "path": "/streams", "operation": "ListStreams"},
]


@pytest.fixture(autouse=True)
def routes(settings):
    settings.QUOTA_AUTHZ_ROUTES = json.dumps(ROUTES)
    _routes.cache_clear()
    yield
    _routes.cache_clear()


@pytest.fixture
def shard_limit(db):
    return LimitFactory(
        name="shards", operation=OperationFactory(name="ModifyShardCount"), quantity=2, key_by=["customer", "resource"]
    )


def nginx(api, method="POST", uri="/streams/s1/shards", customer="acct-1", **extra):
    headers = {"HTTP_X_ORIGINAL_METHOD": method, "HTTP_X_ORIGINAL_URI": uri, "HTTP_X_REAL_IP": "198.51.100.7"}
    if customer:
        headers["HTTP_X_QUOTA_CUSTOMER"] = customer
    return api.get("/api/v1/authz", **headers, **extra)


def test_nginx_style_requests_are_limited_per_customer_and_resource(api, shard_limit) -> None:
    assert [nginx(api).status_code for _ in range(3)] == [200, 200, 429]
    refused = nginx(api)
    assert refused.json()["code"] == "OVER_LIMIT"
    assert refused["Retry-After"] == "60"
    assert refused["RateLimit-Policy"] == '"shards";q=2;w=60'
    assert nginx(api, uri="/streams/s2/shards?x=1").status_code == 200


def test_traefik_style_headers_work_too(api, shard_limit) -> None:
    headers = {
        "HTTP_X_FORWARDED_METHOD": "POST",
        "HTTP_X_FORWARDED_URI": "/streams/s9/shards",
        "HTTP_X_QUOTA_CUSTOMER": "a",
    }

    assert api.get("/api/v1/authz", **headers).json()["limits"][0]["remaining"] == 1


def test_envoy_style_path_prefix_carries_the_original_path(api, shard_limit) -> None:
    response = api.post("/api/v1/authz/streams/s3/shards", HTTP_X_QUOTA_CUSTOMER="acct-1")

    assert response.status_code == 200
    assert response.json()["limits"][0]["name"] == "shards"


def test_a_path_no_route_maps_follows_the_unmatched_policy(api, shard_limit, settings) -> None:
    assert nginx(api, uri="/health").status_code == 200
    settings.QUOTA_AUTHZ_UNMATCHED = "deny"
    assert nginx(api, uri="/health").status_code == 403


def test_the_method_must_match_the_route(api, shard_limit) -> None:
    assert nginx(api, method="GET").json()["limits"] == []


def test_a_customer_bound_key_needs_no_header_and_cannot_name_another_customer(customer_key, engine, shard_limit):
    tenant = client_with(customer_key)

    assert nginx(tenant, customer="").status_code == 200
    assert nginx(tenant, customer="acct-2").status_code == 403


def test_a_service_key_without_a_customer_header_gets_400(api, shard_limit) -> None:
    response = nginx(api, customer="")

    assert response.status_code == 400
    assert "X-Quota-Customer" in response.json()["error"]["message"]
