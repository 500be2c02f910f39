"""An audited hybrid limit through the API: the API worker's exchanges and an SDK limiter's (/api/v1/sync) are
logged as `sync` entries in the counter's slot, drain, and audit within the bound; SDK limiters that admit more
than the others left are found. Real Redis and PostgreSQL; this process is the API worker."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from apps.enforcement.hybrid import counters as hybrid
from apps.engine.decision_log import log_key
from apps.quality.models import DecisionEvent
from apps.quality.services.audits import audit_quality_run, log_filters
from apps.quality.services.drain import decision_log_drain
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_hybrid_counters")]
SYNC_MS = 1000


@pytest.fixture
def hot(db):
    CustomerFactory(external_id="acct-1")
    return LimitFactory(
        name="hot", operation=OperationFactory(name="PutRecords"), quantity=5, algorithm="fixed_window",
        period_seconds=3600, key_by=["customer"], sync_ms=SYNC_MS, audit=True,
    )  # fmt: skip


def post(api, path: str, **fields):  # type: ignore[no-untyped-def]
    return api.post(path, {"customer": "acct-1", "operation": "PutRecords", **fields}, format="json")


def sdk_reports(api, count: int, instance: str = "i-1", answer: dict | None = None) -> dict:  # type: ignore[no-untyped-def]
    """An SDK local limiter (`instance`) reports `count` admitted in the current window (the window of `answer`,
    else of a first exchange with count 0)."""
    if answer is None:
        (answer,) = post(api, "/api/v1/sync", instance=instance).json()["limits"]
    start, end = answer["window_start"], answer["window_end"]
    counter = {"limit": "hot", "window_start": start, "prev_window_start": 2 * start - end, "count": count,
               "count_prev": 0}  # fmt: skip
    assert post(api, "/api/v1/sync", instance=instance, counters=[counter]).status_code == 200
    return answer


def audited(redis_client, key_prefix):  # type: ignore[no-untyped-def]
    decision_log_drain(client=redis_client, prefix=key_prefix)
    now = dt.datetime.now(dt.UTC)
    return audit_quality_run(filters=log_filters(start=now - dt.timedelta(hours=2), end=now + dt.timedelta(hours=1)))


def test_the_workers_and_an_sdk_limiters_exchanges_are_logged_and_audit_clean(api, hot, redis_client, key_prefix):
    assert [post(api, "/api/v1/check").json()["allowed"] for _ in range(7)] == [True] * 5 + [False] * 2
    time.sleep(SYNC_MS / 1000 + 0.05)
    hybrid.hybrid_tick()  # the worker's timer: it reports its 5
    sdk_reports(api, 2)

    entries = [
        (fields[b"i"].decode(), int(fields[b"n"])) for _, fields in redis_client.xrange(log_key(key_prefix, "c=acct-1"))
    ]
    worker = [count for instance, count in entries if instance == hybrid.INSTANCE]
    sdk = [count for instance, count in entries if instance.startswith("sdk:") and instance.endswith(":i-1")]
    # Each as reported, absolute: the worker exchanged before its first decision, then at its timer (and at a
    # check of its own if the machine made the seven checks last longer than an interval).
    assert (worker[0], worker[-1], sdk, len(worker) + len(sdk)) == (0, 5, [0, 2], len(entries))

    outcome = audited(redis_client, key_prefix)

    assert DecisionEvent.objects.filter(kind="sync", limit="hot", mode="hybrid").count() == len(entries)
    assert outcome.report.violations == []
    (limit,) = outcome.run.report["limits"]
    assert (limit["mode"], limit["admitted_cost"], limit["exchanges"]) == ("hybrid", 7, len(entries))


def test_sdk_limiters_that_admitted_more_than_the_others_left_are_found(api, hot, redis_client, key_prefix):
    """A count is at most the quantity (what one instance can admit), so it takes two limiters: each reports the
    whole limit, one admission per exchange, after the worker admitted it all."""
    assert all(post(api, "/api/v1/check").json()["allowed"] for _ in range(5))
    time.sleep(SYNC_MS / 1000 + 0.05)
    hybrid.hybrid_tick()
    answer = sdk_reports(api, 1, "i-1")
    sdk_reports(api, 1, "i-2", answer)
    for count in range(2, 6):
        sdk_reports(api, count, "i-1", answer)
        sdk_reports(api, count, "i-2", answer)

    (found,) = audited(redis_client, key_prefix).report.violations

    # 15 reported; the bound is 5 + what each admitted in its last two changes (worker 5, each limiter 2).
    assert (found.kind, found.limit, found.customer, found.observed, found.allowed) == (
        "over_hybrid_bound", "hot", "acct-1", 15, 14
    )  # fmt: skip
    assert f"window starting at {answer['window_start']}" in found.detail
