"""Request ids of checks whose limits are all hybrid (decided in this process, hybrid_decide.py): remembered in Redis
under the key and in the format check.lua uses, so a retry is replayed and counted once, an id reused with other
parameters is refused with 422, and either path replays what the other stored. Real Redis, PostgreSQL, API client."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
from django.db.models import Sum

from apps.apikeys.services import api_key_prefix_of
from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import CircuitBreaker
from apps.enforcement.decisions.services import decide
from apps.enforcement.ledger.pending import decision_ledger
from apps.engine import CheckItem, LimitSpec
from apps.engine.store.stored_decisions import check_fingerprint, stored_replay, stored_text
from apps.limits.models import Limit
from apps.limits.snapshot import snapshot_build
from apps.limits.snapshot_holder import snapshot_holder_reset
from apps.usage.models import UsageMinute
from apps.usage.services import usage_flush
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_hybrid_counters")]


@pytest.fixture
def hot(db) -> Limit:
    operation = OperationFactory(name="PutRecords")
    return LimitFactory(
        name="hot", operation=operation, quantity=30, algorithm="fixed_window", period_seconds=3600,
        key_by=["customer"], sync_ms=60_000,
    )  # fmt: skip


def check(api, **fields):
    return api.post("/api/v1/check", {"customer": "acct-1", "operation": "PutRecords", **fields}, format="json")


def remaining(api) -> int:
    """What the hot limit has left, by a dry run (it takes nothing)."""
    return check(api, dry_run=True).json()["limits"][0]["remaining"]


def usage_totals(engine, clock) -> dict:
    """Usage counted in PostgreSQL once both counters of decisions are flushed: the in-process ledger (hybrid
    decisions) and Redis's usage (exact ones)."""
    decision_ledger.flush()
    usage_flush(store=engine, now_ms=max(clock.now_ms(), int(time.time() * 1000)) + 3 * 60_000)
    totals = UsageMinute.objects.filter(customer="acct-1").aggregate(allowed=Sum("allowed"), denied=Sum("denied"))
    return {name: value or 0 for name, value in totals.items()}


def stored(redis_client, key_prefix, request_id: str) -> str | None:
    value = redis_client.get(f"{key_prefix}:i:{{c=acct-1}}:{request_id}")
    return None if value is None else value.decode()


def test_a_retry_is_replayed_and_counted_once(api, hot, engine, clock, redis_client, key_prefix, service_key) -> None:
    first = check(api, request_id="r-1")
    retry = check(api, request_id="r-1")

    assert (first.status_code, retry.status_code) == (200, 200)
    assert retry.json() == first.json()
    assert _rate_headers(first)  # the answer's RateLimit headers, replayed as they were
    assert _rate_headers(retry) == _rate_headers(first)
    assert first.json()["limits"][0]["remaining"] == 29
    assert remaining(api) == 29  # the retry took nothing
    text = stored(redis_client, key_prefix, "r-1")
    assert text is not None
    caller = {"service": "control-plane", "api_key": api_key_prefix_of(service_key)}  # the fingerprint names the caller
    assert text.endswith("|" + check_fingerprint(CheckItem("acct-1", "PutRecords", **caller)))
    assert redis_client.pttl(f"{key_prefix}:i:{{c=acct-1}}:r-1") > 590_000
    check(api, request_id="r-2")
    assert usage_totals(engine, clock) == {"allowed": 2, "denied": 0}  # r-1 once, r-2 once; dry runs never


def test_a_refusal_is_replayed_too(api, hot, engine, clock) -> None:
    refused = check(api, request_id="big", costs={"requests": 31})  # more than the limit: never admitted
    assert refused.json()["allowed"] is False
    assert check(api, request_id="big", costs={"requests": 31}).json() == refused.json()
    assert usage_totals(engine, clock) == {"allowed": 0, "denied": 1}


@pytest.mark.parametrize(
    "changed",
    [{"resource": "stream-2"}, {"costs": {"requests": 2}}, {"attributes": {"Kind": "y"}}, {"dry_run": True}],
    ids=lambda changed: next(iter(changed)),
)
def test_an_id_reused_for_other_parameters_answers_422_and_counts_nothing(
    api, hot, engine, clock, redis_client, key_prefix, changed
) -> None:
    assert check(api, request_id="r-1").status_code == 200
    before = stored(redis_client, key_prefix, "r-1")

    response = check(api, request_id="r-1", **changed)

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "idempotency_key_reused"
    assert stored(redis_client, key_prefix, "r-1") == before
    assert remaining(api) == 29
    assert usage_totals(engine, clock) == {"allowed": 1, "denied": 0}


def test_a_dry_run_reads_the_id_and_stores_nothing(api, hot, redis_client, key_prefix) -> None:
    assert check(api, request_id="dry-1", dry_run=True).status_code == 200
    assert stored(redis_client, key_prefix, "dry-1") is None
    assert check(api, request_id="dry-1").json()["limits"][0]["remaining"] == 29  # decided afresh


def test_an_independent_batch_replays_and_refuses_a_reused_id_whole(api, hot, engine, clock) -> None:
    assert check(api, request_id="r-1").status_code == 200
    item = {"customer": "acct-1", "operation": "PutRecords"}
    items = [{**item, "request_id": "r-2"}, {**item, "request_id": "r-1", "resource": "other"}]

    response = api.post("/api/v1/check/batch", {"items": items, "mode": "independent"}, format="json")

    assert response.status_code == 422
    assert set(response.json()["error"]["fields"]["items"]) == {"1"}
    assert remaining(api) == 29  # the refused batch decided nothing, r-2 included
    items = [{**item, "request_id": "r-3"}, {**item, "request_id": "r-3", "resource": "other"}]
    response = api.post("/api/v1/check/batch", {"items": items, "mode": "independent"}, format="json")
    assert set(response.json()["error"]["fields"]["items"]) == {"1"}  # repeated within the batch
    assert remaining(api) == 29
    items = [{**item, "request_id": "r-1"}, {**item, "request_id": "r-2"}, {**item, "request_id": "r-2"}]
    body = api.post("/api/v1/check/batch", {"items": items, "mode": "independent"}, format="json").json()
    assert [result["limits"][0]["remaining"] for result in body["results"]] == [29, 28, 28]
    assert usage_totals(engine, clock) == {"allowed": 2, "denied": 0}


def test_concurrent_retries_of_one_id_are_decided_and_counted_once(hot, engine, clock, settings) -> None:
    # 60 threads at once open new connections: on a busy machine some would reach Redis past the hot path's 50 ms
    # deadline and be decided without it; this test is about races, not timeouts.
    settings.QUOTA_REDIS_TIMEOUT_MS = 2000
    hot.quantity = 1000  # room for every reservation at once: the losers' hold until given back refuses no one
    hot.save()
    limits = snapshot_build().limits_by_operation["PutRecords"]
    ids, threads_per_id = [f"race-{n}" for n in range(10)], 6
    answers: dict[str, list] = {request_id: [] for request_id in ids}
    barrier = threading.Barrier(len(ids) * threads_per_id)

    def retry(request_id: str) -> None:
        barrier.wait()
        answers[request_id].append(decide(CheckItem("acct-1", "PutRecords", request_id=request_id), limits))

    threads = [threading.Thread(target=retry, args=(request_id,)) for request_id in ids for _ in range(threads_per_id)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert all(len(outcomes) == threads_per_id for outcomes in answers.values())
    assert all(len({outcome.limits for outcome in outcomes}) == 1 for outcomes in answers.values())  # one answer
    assert all(outcome.allowed for outcomes in answers.values() for outcome in outcomes)
    after = decide(CheckItem("acct-1", "PutRecords", dry_run=True), limits).limits[0].remaining
    assert after == 1000 - len(ids)  # every retry that lost the race gave back what it took
    assert usage_totals(engine, clock) == {"allowed": len(ids), "denied": 0}


def test_with_redis_unreachable_a_check_is_decided_without_memory(api, hot, settings, monkeypatch) -> None:
    monkeypatch.setattr(store, "redis_breaker", CircuitBreaker(failure_threshold=1000, open_s=60))
    monkeypatch.setattr(store, "_reconcile_due", False)  # restored after the test: the failures set it
    settings.COUNTERS_REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens: the memory and the exchanges fail
    first, retry = check(api, request_id="r-1"), check(api, request_id="r-1")
    assert (first.status_code, retry.status_code) == (200, 200)
    assert [first.json()["allowed"], retry.json()["allowed"]] == [True, True]
    # Decided twice (no memory): before any exchange the counter ramps its own share, 30 // 3 = 10.
    assert [first.json()["limits"][0]["remaining"], retry.json()["limits"][0]["remaining"]] == [9, 8]


def test_exact_and_hybrid_checks_replay_what_the_other_stored(api, hot, clock) -> None:
    clock.set(int(time.time() * 1000))  # check.lua's clock: the hybrid path judges a stored decision's age by its own
    switch(hot, None)
    exact = check(api, request_id="by-exact")
    assert exact.json()["limits"][0]["mode"] == "exact"
    switch(hot, 60_000)
    by_hybrid = check(api, request_id="by-hybrid")
    assert by_hybrid.json()["limits"][0]["mode"] == "hybrid"

    replayed = check(api, request_id="by-exact")  # decided by Redis, replayed by this process
    assert replayed.json()["limits"][0]["mode"] == "hybrid"
    assert _verdict(replayed.json()) == _verdict(exact.json())
    assert check(api, request_id="by-exact", resource="other").status_code == 422
    switch(hot, None)
    again = check(api, request_id="by-hybrid")  # decided by this process, replayed by check.lua
    assert again.json()["limits"][0]["mode"] == "exact"
    assert _verdict(again.json()) == _verdict(by_hybrid.json())
    assert check(api, request_id="by-hybrid", resource="other").status_code == 422


def switch(limit: Limit, sync_ms: int | None) -> None:
    """`limit` counted exactly (None) or hybrid, as an admin save does."""
    limit.sync_ms = sync_ms
    limit.save()
    snapshot_holder_reset()


def _rate_headers(response) -> dict:
    return {name: value for name, value in response.headers.items() if name.lower().startswith(("ratelimit", "x-"))}


def _verdict(body: dict) -> tuple:
    return body["allowed"], [(limit["name"], limit["limit"], limit["remaining"]) for limit in body["limits"]]


@pytest.mark.parametrize("cost", [1, 8], ids=["admitted", "refused"])
def test_stored_text_is_what_check_lua_stores(engine, redis_client, key_prefix, cost: int) -> None:
    limits = [
        LimitSpec("per-hour", "fixed_window", 5, period_s=3600, key_by=("customer",)),
        LimitSpec("records", "fixed_window", 100, period_s=60, unit="records", shadow=True),
    ]
    item = CheckItem("acct-1", "PutRecords", costs={"requests": cost, "records": 7}, request_id="lua-1")
    decision = engine.check(item, limits)
    text = stored(redis_client, key_prefix, "lua-1")
    assert text is not None
    decided_at, fingerprint = int(text.split("|", 1)[0]), check_fingerprint(item)
    assert stored_text(decision, fingerprint, decided_at) == text
    assert stored_replay(text, fingerprint, False, decided_at) == dataclasses.replace(decision, replayed=True)
