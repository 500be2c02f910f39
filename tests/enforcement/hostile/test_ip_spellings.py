"""One address, one per-IP counter, whatever its spelling (issue 23 finding 9).

Five spellings of `fe80::99` with a zone id (`%eth0`) made five per-IP counters for one address. A zone names a
network interface of the host that wrote it and means nothing here, so an address with one is refused with 400
naming `ip`, and nothing moves. Every spelling that is accepted counts on one counter: upper or lower case, full
or compressed, leading zeros in a group, and an IPv4 client seen through an IPv6 socket (`::ffff:203.0.113.7`),
which counts as that IPv4 client, as access rules already match it (apps/limits/resolution.py)."""

from __future__ import annotations

import json

import pytest

from apps.enforcement.gateway.authz import _routes
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db

IPV6 = ("2001:db8::99", "2001:DB8::99", "2001:0db8:0000:0000:0000:0000:0000:0099", "2001:db8:0:0:0:0:0:99",
        "2001:0DB8::0:99")  # fmt: skip
IPV4 = ("203.0.113.7", "::ffff:203.0.113.7", "::FFFF:CB00:7107", "0:0:0:0:0:ffff:203.0.113.7",
        "0000:0000:0000:0000:0000:ffff:cb00:7107")  # fmt: skip
ZONED = ("fe80::99%eth0", "fe80::99%25eth0", "FE80::0099%ETH0", "fe80::99%1", "fe80:0:0:0:0:0:0:99%eth0")


@pytest.fixture
def per_ip(db):
    return LimitFactory(name="per-ip", operation=OperationFactory(name="Fetch"), quantity=100, key_by=["ip"])


def check(api, ip: str, **fields):
    return api.post("/api/v1/check", {"customer": "acct-1", "operation": "Fetch", "ip": ip, **fields}, format="json")


def counter_keys(redis_client, key_prefix: str) -> list[str]:
    return sorted(key.decode() for key in redis_client.scan_iter(match=f"{key_prefix}:c:*", count=1000))


@pytest.mark.parametrize(("spellings", "canonical"), [(IPV6, "2001:db8::99"), (IPV4, "203.0.113.7")])
def test_every_spelling_of_one_address_counts_on_one_counter(
    api, per_ip, redis_client, key_prefix, spellings, canonical
) -> None:
    remaining = [check(api, ip).json()["limits"][0]["remaining"] for ip in spellings]

    assert remaining == [99, 98, 97, 96, 95]
    (key,) = counter_keys(redis_client, key_prefix)
    assert key.startswith(f"{key_prefix}:c:{{i={canonical.replace(':', '%3A')}}}:")


@pytest.mark.parametrize("ip", ZONED)
def test_an_address_with_a_zone_is_refused_naming_ip_and_nothing_moves(
    api, per_ip, redis_client, key_prefix, ip
) -> None:
    response = check(api, ip)

    assert response.status_code == 400
    (problem,) = response.json()["error"]["fields"]["ip"]
    assert "zone" in problem
    assert ip in problem
    assert list(redis_client.scan_iter(match=f"{key_prefix}*", count=1000)) == []


def test_the_address_without_its_zone_is_accepted(api, per_ip, redis_client, key_prefix) -> None:
    assert check(api, "fe80::99").status_code == 200
    assert check(api, "FE80:0:0:0:0:0:0:0099").json()["limits"][0]["remaining"] == 98


def test_a_zone_in_a_batch_item_is_refused_with_the_items_place_and_nothing_moves(
    api, per_ip, redis_client, key_prefix
) -> None:
    items = [{"customer": "acct-1", "operation": "Fetch", "ip": ip} for ip in ("203.0.113.7", "fe80::99%eth0")]

    response = api.post("/api/v1/check/batch", {"items": items}, format="json")

    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]["items"]) == ["1"]
    assert "zone" in response.json()["error"]["fields"]["items"]["1"]["ip"][0]
    assert list(redis_client.scan_iter(match=f"{key_prefix}*", count=1000)) == []


def test_a_gateway_forwarding_an_address_with_a_zone_is_refused_and_nothing_moves(
    api, per_ip, redis_client, key_prefix, settings
) -> None:
    settings.QUOTA_AUTHZ_ROUTES = json.dumps([{"method": "*", "path": "/fetch", "operation": "Fetch"}])
    _routes.cache_clear()
    headers = {"HTTP_X_ORIGINAL_METHOD": "GET", "HTTP_X_ORIGINAL_URI": "/fetch", "HTTP_X_QUOTA_CUSTOMER": "acct-1"}
    try:
        refused = api.get("/api/v1/authz", HTTP_X_REAL_IP="fe80::99%eth0", **headers)
        mapped = api.get("/api/v1/authz", HTTP_X_REAL_IP="::ffff:203.0.113.7", **headers)
        plain = api.get("/api/v1/authz", HTTP_X_REAL_IP="203.0.113.7", **headers)
    finally:
        _routes.cache_clear()

    assert refused.status_code == 400
    assert "zone" in refused.json()["error"]["fields"]["ip"][0]
    assert (mapped.status_code, plain.json()["limits"][0]["remaining"]) == (200, 98)
    assert len(counter_keys(redis_client, key_prefix)) == 1
