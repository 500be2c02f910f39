"""GET /api/v1/toggles and /api/v1/toggles/{name} through the real stack (APIClient, PostgreSQL): what each key
sees, strong ETags and 304s, the error shape, and no database query per request once a snapshot is read."""

import hashlib

import orjson
import pytest

from apps.apikeys.services import api_key_create
from apps.limits.snapshot_holder import snapshot_holder
from apps.toggles.selectors import toggle_index_reset
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import OperationFactory
from tests.toggles.factories import FeatureToggleFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_toggle_index():
    toggle_index_reset()
    yield
    toggle_index_reset()


@pytest.fixture
def toggles(db):
    """A global toggle, one of acct-1's (the customer_key fixture's) and one of acct-2's."""
    acct_1 = CustomerFactory(external_id="acct-1")
    acct_2 = CustomerFactory(external_id="acct-2")
    return {
        "planner": FeatureToggleFactory(name="new-shard-planner", enabled=True, payload={"rollout_percent": 25}),
        "acct-1": FeatureToggleFactory(name="acct-1-bulk", enabled=False, customer=acct_1),
        "acct-2": FeatureToggleFactory(name="acct-2-beta", enabled=True, customer=acct_2),
    }


@pytest.fixture
def service(service_key, toggles):
    return client_with(service_key)


@pytest.fixture
def bound(toggles):
    key = api_key_create(service=ServiceFactory(name="tenant-app"), customer=toggles["acct-1"].customer)
    return client_with(key.secret)


def names(response) -> list[str]:
    return [toggle["name"] for toggle in response.json()["toggles"]]


def republish(django_capture_on_commit_callbacks, change) -> None:
    """Make a change, commit it (the config version moves) and let this worker pick it up, as the poller does."""
    with django_capture_on_commit_callbacks(execute=True):
        change()
    assert snapshot_holder().refresh()


def test_a_service_wide_key_reads_every_toggle_sorted_by_name(service, toggles) -> None:
    response = service.get("/api/v1/toggles")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert names(response) == ["acct-1-bulk", "acct-2-beta", "new-shard-planner"]
    assert body["version"] == snapshot_holder().get().version
    assert body["toggles"][2] == {
        "name": "new-shard-planner",
        "enabled": True,
        "payload": {"rollout_percent": 25},
        "customer": None,
        "updated_at": toggles["planner"].updated_at.isoformat().replace("+00:00", "Z"),
    }
    assert body["toggles"][0]["customer"] == "acct-1"


def test_one_toggles_etag_is_strong_from_its_body_and_the_lists_weak_from_the_toggles_alone(service) -> None:
    one = service.get("/api/v1/toggles/new-shard-planner")
    listing = service.get("/api/v1/toggles")

    assert one["ETag"] == f'"{hashlib.sha256(one.content).hexdigest()[:32]}"'
    toggles = orjson.dumps(listing.json()["toggles"])
    assert listing["ETag"] == f'W/"{hashlib.sha256(toggles).hexdigest()[:32]}"'
    for response in (one, listing):
        assert response["Cache-Control"] == "private, no-cache"
        assert response["Vary"] == "Authorization"


def test_a_config_change_that_leaves_the_toggles_alone_keeps_the_lists_etag(
    service, toggles, django_capture_on_commit_callbacks
) -> None:
    before = service.get("/api/v1/toggles")
    republish(django_capture_on_commit_callbacks, lambda: OperationFactory(name="SomethingElse"))
    after = service.get("/api/v1/toggles")

    assert after.json()["version"] > before.json()["version"]  # the config moved, the toggles did not
    assert after["ETag"] == before["ETag"]
    assert service.get("/api/v1/toggles", HTTP_IF_NONE_MATCH=before["ETag"]).status_code == 304


def test_one_toggle_is_read_by_name(service, toggles) -> None:
    response = service.get("/api/v1/toggles/new-shard-planner")

    assert response.status_code == 200
    assert response.json() == service.get("/api/v1/toggles").json()["toggles"][2]


def test_an_unknown_toggle_is_404_in_the_error_shape(service) -> None:
    response = service.get("/api/v1/toggles/no-such-toggle")

    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "code": "unknown_toggle",
            "message": "There is no feature toggle named “no-such-toggle”.",
            "fields": {},
        }
    }


def test_a_key_bound_to_a_customer_reads_the_global_toggles_and_its_customer_s_only(bound) -> None:
    listed = bound.get("/api/v1/toggles")

    assert names(listed) == ["acct-1-bulk", "new-shard-planner"]
    assert bound.get("/api/v1/toggles/acct-1-bulk").status_code == 200
    other = bound.get("/api/v1/toggles/acct-2-beta")
    assert other.status_code == 404
    assert other.json()["error"]["code"] == "unknown_toggle"  # the same answer as a name that does not exist


def test_keys_of_different_scopes_get_different_etags(service, bound) -> None:
    assert service.get("/api/v1/toggles")["ETag"] != bound.get("/api/v1/toggles")["ETag"]


def test_the_etag_stays_while_nothing_changes_and_moves_after_a_toggle_edit(
    service, toggles, django_capture_on_commit_callbacks
) -> None:
    before = service.get("/api/v1/toggles")["ETag"]
    one_before = service.get("/api/v1/toggles/new-shard-planner")["ETag"]
    other_before = service.get("/api/v1/toggles/acct-1-bulk")["ETag"]
    assert service.get("/api/v1/toggles")["ETag"] == before

    def flip() -> None:
        toggles["planner"].enabled = False
        toggles["planner"].save()

    republish(django_capture_on_commit_callbacks, flip)

    after = service.get("/api/v1/toggles")
    assert after["ETag"] != before
    assert after.json()["toggles"][2]["enabled"] is False
    assert service.get("/api/v1/toggles/new-shard-planner")["ETag"] != one_before
    assert service.get("/api/v1/toggles/acct-1-bulk")["ETag"] == other_before  # untouched toggle, same ETag
    assert service.get("/api/v1/toggles", HTTP_IF_NONE_MATCH=before).status_code == 200


def test_a_new_toggle_and_a_deleted_one_show_after_the_next_snapshot(
    service, toggles, django_capture_on_commit_callbacks
) -> None:
    republish(django_capture_on_commit_callbacks, lambda: FeatureToggleFactory(name="zz-new", enabled=True))
    republish(django_capture_on_commit_callbacks, toggles["acct-2"].delete)

    assert names(service.get("/api/v1/toggles")) == ["acct-1-bulk", "new-shard-planner", "zz-new"]
    assert service.get("/api/v1/toggles/acct-2-beta").status_code == 404


@pytest.mark.parametrize("path", ["/api/v1/toggles", "/api/v1/toggles/new-shard-planner"])
@pytest.mark.parametrize(
    "header",
    ["{etag}", '"older", {etag}', '"a,b", {etag} , "c"', "W/{etag}", "*", " * "],
    ids=["exact", "in-a-list", "list-with-commas-inside-tags", "weak-form", "star", "star-spaced"],
)
def test_if_none_match_that_matches_answers_304_with_no_body(service, path, header) -> None:
    etag = service.get(path)["ETag"]

    response = service.get(path, HTTP_IF_NONE_MATCH=header.format(etag=etag))

    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == etag


@pytest.mark.parametrize("header", ['"stale"', "", "garbage", '"unterminated', "W/", ",,,", '"é"'])
def test_if_none_match_that_does_not_match_answers_the_toggles(service, header) -> None:
    response = service.get("/api/v1/toggles", HTTP_IF_NONE_MATCH=header)

    assert response.status_code == 200
    assert len(response.json()["toggles"]) == 3


def test_a_star_on_a_toggle_that_does_not_exist_is_still_404(service, bound) -> None:
    assert service.get("/api/v1/toggles/nope", HTTP_IF_NONE_MATCH="*").status_code == 404
    assert bound.get("/api/v1/toggles/acct-2-beta", HTTP_IF_NONE_MATCH="*").status_code == 404


def test_answers_need_no_database_query_once_the_snapshot_is_read(service, bound, django_assert_num_queries) -> None:
    etag = service.get("/api/v1/toggles")["ETag"]  # warm-up: this process reads its snapshot and its toggles

    with django_assert_num_queries(0):
        assert service.get("/api/v1/toggles").status_code == 200
        assert service.get("/api/v1/toggles", HTTP_IF_NONE_MATCH=etag).status_code == 304
        assert service.get("/api/v1/toggles/new-shard-planner").status_code == 200
        assert service.get("/api/v1/toggles/nope").status_code == 404
        assert bound.get("/api/v1/toggles").status_code == 200


@pytest.mark.parametrize("path", ["/api/v1/toggles", "/api/v1/toggles/new-shard-planner"])
@pytest.mark.parametrize("authorization", [None, "Bearer qp_nope.wrong", "Basic abc", "Bearer "])
def test_without_a_valid_key_it_is_401(toggles, path, authorization) -> None:
    client = client_with(None)
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}

    response = client.get(path, **headers)

    assert response.status_code == 401
    assert set(response.json()["error"]) == {"code", "message", "fields"}
    assert "new-shard-planner" not in response.content.decode()


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/v1/toggles?customer=acct-2", "customer"),
        ("/api/v1/toggles/new-shard-planner?x=1", "x"),
        ("/api/v1/toggles/bad%01name", "name"),
        ("/api/v1/toggles/bad%7Fname", "name"),
        ("/api/v1/toggles/" + "n" * 101, "name"),
    ],
)
def test_bad_input_is_refused_with_400_naming_the_field(service, path, field) -> None:
    response = service.get(path)

    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_other_methods_are_405_in_the_error_shape(service, method) -> None:
    response = getattr(service, method)("/api/v1/toggles")

    assert response.status_code == 405
    assert response.json()["error"]["code"]


def test_odd_names_are_answered_never_500(service) -> None:
    for name in ("%C3%A9t%C3%A9", "a%20b", "..", "%E2%80%AE", "x" * 100, "%F0%9F%9A%80"):
        assert service.get(f"/api/v1/toggles/{name}").status_code == 404
