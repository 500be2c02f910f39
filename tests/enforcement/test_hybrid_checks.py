"""Limits with sync_ms through the API: decided by this process (hybrid counting,
enforcement/hybrid/counting.py), all or nothing beside exact limits,
reported as `mode: hybrid`, and counted in usage once; real Redis and PostgreSQL."""

from __future__ import annotations

import pytest
from django.db.models import Sum

from apps.enforcement.ledger.pending import decision_ledger
from apps.usage.models import UsageMinute
from apps.usage.services import usage_flush
from tests.limits.factories import LimitFactory, OperationFactory
from tests.support.redis_monitor import commands_sent_during

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_hybrid_counters")]


@pytest.fixture
def operation(db):
    return OperationFactory(name="PutRecords")


def hot_limit(operation, quantity: int = 5, **fields):
    defaults = {"algorithm": "fixed_window", "period_seconds": 3600, "key_by": ["customer"], "sync_ms": 1000}
    return LimitFactory(name="hot", operation=operation, quantity=quantity, **{**defaults, **fields})


def check(api, **fields):
    return api.post("/api/v1/check", {"customer": "acct-1", "operation": "PutRecords", **fields}, format="json")


def test_a_hybrid_limit_is_decided_in_process_and_says_so(api, operation, redis_client) -> None:
    hot_limit(operation)
    answers = [check(api).json() for _ in range(7)]
    assert [answer["allowed"] for answer in answers] == [True] * 5 + [False] * 2
    assert answers[0]["limits"][0]["mode"] == "hybrid"
    assert [answer["limits"][0]["remaining"] for answer in answers[:5]] == [4, 3, 2, 1, 0]
    assert answers[-1]["code"] == "OVER_LIMIT"
    assert 0 < answers[-1]["retry_after_ms"] <= 3_600_000


def test_checks_on_a_hybrid_limit_reach_redis_once_per_interval_not_per_check(api, operation, redis_url) -> None:
    hot_limit(operation, quantity=1000, sync_ms=60_000)
    check(api)  # the first check exchanges (and loads the script)
    sent = commands_sent_during(redis_url, lambda: [check(api) for _ in range(50)])
    assert [command for command in sent if command in ("EVALSHA", "EVAL", "FCALL")] == []


def test_an_exact_limit_refusing_gives_the_hybrid_reservation_back(api, operation) -> None:
    hot_limit(operation, quantity=10)
    LimitFactory(name="exact", operation=operation, quantity=2, algorithm="fixed_window", period_seconds=3600)
    answers = [check(api).json() for _ in range(4)]
    assert [answer["allowed"] for answer in answers] == [True, True, False, False]
    assert {limit["name"]: limit["mode"] for limit in answers[0]["limits"]} == {"hot": "hybrid", "exact": "exact"}
    hot = [next(limit for limit in answer["limits"] if limit["name"] == "hot") for answer in answers]
    assert [limit["remaining"] for limit in hot] == [9, 8, 8, 8]  # the refused checks took nothing


def test_a_hybrid_refusal_spends_nothing_of_the_exact_limits(api, operation) -> None:
    hot_limit(operation, quantity=2)
    LimitFactory(name="exact", operation=operation, quantity=10, algorithm="fixed_window", period_seconds=3600)
    answers = [check(api).json() for _ in range(4)]
    assert [answer["allowed"] for answer in answers] == [True, True, False, False]
    exact = [next(limit for limit in answer["limits"] if limit["name"] == "exact") for answer in answers]
    assert [limit["remaining"] for limit in exact] == [9, 8, 8, 8]


def test_usage_counts_hybrid_decisions_once(api, operation, engine, clock) -> None:
    hot_limit(operation, quantity=3)
    LimitFactory(name="exact", operation=operation, quantity=100, algorithm="fixed_window", period_seconds=3600)
    for _ in range(5):
        check(api)
    check(api, dry_run=True)
    # Redis counted the admitted checks (it decided their exact limit); the ledger the ones hybrid refused.
    usage_flush(store=engine, now_ms=clock.now_ms() + 3 * 60_000)
    decision_ledger.flush()
    totals = UsageMinute.objects.filter(customer="acct-1").aggregate(allowed=Sum("allowed"), denied=Sum("denied"))
    assert totals == {"allowed": 3, "denied": 2}


def test_usage_of_a_check_with_only_hybrid_limits_is_counted_in_process(api, operation) -> None:
    hot_limit(operation, quantity=2)
    for _ in range(3):
        check(api)
    decision_ledger.flush()
    totals = UsageMinute.objects.filter(customer="acct-1").aggregate(allowed=Sum("allowed"), denied=Sum("denied"))
    assert totals == {"allowed": 2, "denied": 1}


@pytest.mark.parametrize("mode", ["independent", "atomic"])
def test_a_batch_decides_hybrid_limits_in_process(api, operation, mode: str) -> None:
    hot_limit(operation, quantity=3)
    items = [{"customer": "acct-1", "operation": "PutRecords"} for _ in range(4)]
    body = api.post("/api/v1/check/batch", {"items": items, "mode": mode}, format="json").json()
    verdicts = [result["allowed"] for result in body["results"]]
    assert verdicts == ([True, True, True, False] if mode == "independent" else [False] * 4)
    after = check(api).json()["limits"][0]["remaining"]
    assert after == (0 if mode == "independent" else 2)  # an atomic refusal gave every reservation back


def test_exchanges_that_do_not_land_are_counted_for_operators(api, operation, settings) -> None:
    from prometheus_client import REGISTRY

    def failed() -> float:
        return REGISTRY.get_sample_value("quota_hybrid_exchanges_total", {"outcome": "failed"}) or 0.0

    hot_limit(operation, quantity=5)
    settings.COUNTERS_REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens: every exchange fails
    before = failed()
    answers = [check(api).json() for _ in range(3)]
    assert failed() == before + 1  # the first exchange failed; the next ones are not due yet
    # Before any answer from the store the counter ramps its own share (docs/hybrid.md, edge case 4): 5 // 3.
    assert [answer["allowed"] for answer in answers] == [True, False, False]
