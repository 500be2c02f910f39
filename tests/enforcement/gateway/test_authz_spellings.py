"""Through /api/v1/authz: every spelling of a routed path is matched and counted against the route's limit,
paths with an encoded slash are refused, and QUOTA_AUTHZ_UNMATCHED=deny refuses what no route names."""

import json

import pytest

from apps.enforcement.gateway.authz import _routes
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db

SPELLINGS = ["/streams/", "//streams", "/%73treams", "/streams/../streams", "/./streams", "/../streams"]
LIMIT = len(SPELLINGS) + 1  # the plain spelling, then every other one, fit; the next is refused


@pytest.fixture(autouse=True)
def routes(settings):  # type: ignore[no-untyped-def]
    settings.QUOTA_AUTHZ_ROUTES = json.dumps(
        [
            {"method": "GET", "path": "/streams", "operation": "ListStreams"},
            {"method": "POST", "path": "/streams/(?P<resource>[^/]+)/shards/", "operation": "ModifyShardCount"},
        ]
    )
    settings.QUOTA_AUTHZ_UNMATCHED = "allow"
    _routes.cache_clear()
    yield
    _routes.cache_clear()


@pytest.fixture
def list_limit(db):  # type: ignore[no-untyped-def]
    operation = OperationFactory(name="ListStreams")
    return LimitFactory(name="list", operation=operation, quantity=LIMIT, key_by=["customer"])


def authz(api, uri: str, method: str = "GET"):  # type: ignore[no-untyped-def]
    headers = {"HTTP_X_ORIGINAL_METHOD": method, "HTTP_X_ORIGINAL_URI": uri, "HTTP_X_QUOTA_CUSTOMER": "acct-1"}
    return api.get("/api/v1/authz", **headers)


def remaining(response) -> int:  # type: ignore[no-untyped-def]
    assert response.status_code in (200, 429), response.json()
    return response.json()["limits"][0]["remaining"]


def test_every_spelling_of_a_routed_path_is_counted_against_its_limit(api, list_limit) -> None:
    assert remaining(authz(api, "/streams")) == LIMIT - 1
    for spent, spelling in enumerate(SPELLINGS, start=2):
        response = authz(api, spelling)
        assert response.status_code == 200, spelling
        assert response.json()["limits"][0]["name"] == "list", spelling
        assert remaining(response) == LIMIT - spent, spelling

    for spelling in ["/streams", *SPELLINGS]:
        assert authz(api, spelling).status_code == 429, spelling


@pytest.mark.parametrize("spelling", [*SPELLINGS, "/streams?page=2", "/STREAMS/x/.."])
def test_each_spelling_alone_is_matched_to_the_route(api, list_limit, spelling) -> None:
    response = authz(api, spelling)

    expected = [] if spelling.startswith("/STREAMS") else ["list"]  # paths are case-sensitive
    assert [limit["name"] for limit in response.json()["limits"]] == expected


def test_a_route_written_with_a_trailing_slash_matches_with_or_without_it(api, db) -> None:
    LimitFactory(name="shards", operation=OperationFactory(name="ModifyShardCount"), quantity=2, key_by=["customer"])

    assert authz(api, "/streams/s1/shards", "POST").status_code == 200
    assert authz(api, "/streams/s1//shards/", "POST").status_code == 200
    assert authz(api, "/streams/%73%31/shards", "POST").status_code == 429


@pytest.mark.parametrize("uri", ["/streams%2Fs1%2Fshards", "/streams%2f", "/streams%5C..", "/streams%"])
def test_a_path_with_an_encoded_slash_or_a_broken_escape_is_refused_with_403(api, list_limit, uri) -> None:
    response = authz(api, uri, "POST")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "path_refused"


def test_unmatched_paths_follow_the_policy_after_normalization(api, list_limit, settings) -> None:
    settings.QUOTA_AUTHZ_UNMATCHED = "deny"

    assert authz(api, "/health").status_code == 403
    assert authz(api, "/health/../streams/").status_code == 200


def test_envoy_path_prefix_spellings_are_normalized_too(api, list_limit) -> None:
    response = api.get("/api/v1/authz//./streams/", HTTP_X_QUOTA_CUSTOMER="acct-1")

    assert response.status_code == 200
    assert remaining(response) == LIMIT - 1
