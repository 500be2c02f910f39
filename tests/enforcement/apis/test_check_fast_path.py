"""The check endpoints' fast path (issue 14) answers as DRF did: same headers on answers and refusals, real
HTTP stack (APIClient), real Redis and PostgreSQL; and what it prepares once per snapshot follows the snapshot."""

import pytest

from apps.api.views import ServiceApi
from apps.apikeys.selectors import KeyConfig, api_principal_of_key
from apps.apikeys.services import api_key_hash
from apps.enforcement.decisions.specs import engine_args
from apps.limits.resolution import limits_of_plan, resolve
from apps.reports.apis import UsageListApi
from tests.enforcement.apis.test_check_api import check, daily_limit  # noqa: F401 - fixture
from tests.limits.test_resolution import limit, override, snapshot, target

pytestmark = pytest.mark.django_db

# Headers that depend on the answer, not on how it was rendered.
PER_ANSWER = {"RateLimit", "RateLimit-Policy", "Retry-After", "Content-Length"}


def test_a_decision_and_a_refusal_of_the_same_endpoint_carry_the_same_framework_headers(api, daily_limit) -> None:  # noqa: F811
    decided = check(api, resource="stream-1")
    refused = api.post("/api/v1/check", {"customer": "acct-1"}, format="json")  # DRF's error path: 400

    assert (decided.status_code, refused.status_code) == (200, 400)
    assert decided["Content-Type"] == "application/json"
    assert decided["Allow"] == "POST, OPTIONS"
    assert "RateLimit" in decided
    assert {k: v for k, v in decided.items() if k not in PER_ANSWER} == {
        k: v for k, v in refused.items() if k not in PER_ANSWER
    }
    assert decided.json()["allowed"] is True


def test_a_batch_answers_json_with_the_same_headers_as_its_refusals(api, daily_limit) -> None:  # noqa: F811
    item = {"customer": "acct-1", "operation": "ModifyShardCount"}
    decided = api.post("/api/v1/check/batch", {"items": [item, item]}, format="json")
    refused = api.post("/api/v1/check/batch", {"items": []}, format="json")

    assert (decided.status_code, refused.status_code) == (200, 400)
    assert decided.json()["allowed_count"] == 2
    assert {k: v for k, v in decided.items() if k not in PER_ANSWER} == {
        k: v for k, v in refused.items() if k not in PER_ANSWER
    }


def test_an_endpoint_that_picks_its_own_negotiation_keeps_drf_s_own() -> None:
    assert ServiceApi._as_base("content_negotiation_class", "authentication_classes")
    assert not UsageListApi._as_base("content_negotiation_class")
    assert type(UsageListApi().get_content_negotiator()) is UsageListApi.content_negotiation_class


def test_keys_are_found_by_hash_in_the_mapping_asked_and_in_no_earlier_one() -> None:
    raw = "qp_0011aabb.secret-part"
    key = KeyConfig(prefix="qp_0011aabb", key_hash=api_key_hash(raw), service="billing", customer=None, operations=())
    with_key = {key.prefix: key}

    first = api_principal_of_key(raw_key=raw, keys=with_key)
    assert first is not None
    assert first.service == "billing"
    assert api_principal_of_key(raw_key=raw, keys=with_key) is first  # indexed once per mapping
    assert api_principal_of_key(raw_key=raw + "x", keys=with_key) is None
    assert api_principal_of_key(raw_key=raw, keys={}) is None  # revoked: the next snapshot has no such key
    assert api_principal_of_key(raw_key=raw, keys={"qp_other": key}) is None  # filed under another prefix


def test_limits_by_plan_are_worked_out_per_snapshot() -> None:
    first = snapshot([limit("all"), limit("pro", plan="pro")])
    second = snapshot([limit("only")])

    assert [x.name for x in limits_of_plan(first, "Op", "pro")] == ["all", "pro"]
    assert [x.name for x in limits_of_plan(first, "Op", None)] == ["all"]
    assert [x.name for x in limits_of_plan(second, "Op", "pro")] == ["only"]
    assert limits_of_plan(second, "Unknown", None) == ()


def test_overrides_and_matches_still_apply_on_top_of_the_prepared_limits() -> None:
    config = snapshot([limit("daily"), limit("scoped", match=(("tier", "gold"),))], overrides=[override(quantity=99)])

    limits = resolve(config, target(), now_ms=0).limits
    assert [(x.name, x.quantity) for x in limits] == [("daily", 99)]
    gold = resolve(config, target(attributes={"tier": "gold"}), now_ms=0).limits
    assert [(x.name, x.quantity) for x in gold] == [("daily", 99), ("scoped", 10)]


def test_engine_arguments_are_prepared_once_per_tuple_of_limits_without_concurrency_limits() -> None:
    counted, leased = limit("daily"), limit("slots")
    leased = type(leased)(**{**leased.__dict__, "algorithm": "concurrency"})
    limits = (counted, leased)

    args = engine_args(limits)
    assert engine_args(limits) is args
    assert args.counted == (counted,)
    assert [spec.name for spec in args.specs] == ["daily"]
    assert dict(args.windows_s) == {"daily": 60}
    assert engine_args(list(limits)) == args  # a list is worked out each time, the same way
