"""Finding 3 of the trust boundary: what `/api/v1/sync` takes from a caller is bounded.

Counts used to be accepted up to 2**53 - 1: 1,100 instances each reporting that pushed a counter's sum past 2**63,
Redis wrapped it to -2**63 and a 30/min limit then admitted 55 of 60. One report from a customer-bound key starved
every tenant of a global hybrid limit, and counters moved without a usage report never reached usage. Now a count
is at most the limit's quantity for the customer (a shadow limit's is clamped to it), a counter keeps at most
MAX_INSTANCES instances, sums saturate, a customer-bound key reports only on counters keyed by its customer, and
what the counters add is in usage. Real Redis and PostgreSQL, the API in-process.
"""

from __future__ import annotations

import signal
import time

import pytest
import redis
from django.db.models import Sum
from quota_client.hybrid import MAX_INSTANCES

from apps.enforcement.hybrid import counters as hybrid
from apps.enforcement.hybrid import stores as hybrid_stores
from apps.enforcement.ledger.pending import decision_ledger
from apps.limits.models import Mode
from apps.usage.models import UsageMinute
from tests.api_fixtures import client_with
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import RedisServer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_hybrid_counters")]
HUGE = 2**53 - 1


@pytest.fixture(autouse=True)
def _patient_redis(settings) -> None:
    """A timeout no busy test machine reaches: these tests are about what is written, not about timeouts."""
    settings.QUOTA_REDIS_TIMEOUT_MS = 2000


def _hybrid(name: str, quantity: int, key_by: list[str], **fields):
    return LimitFactory(
        name=name, operation=OperationFactory(name="Sync"), quantity=quantity, period_seconds=60, key_by=key_by,
        sync_ms=100, **fields,
    )  # fmt: skip


def _sync(api, instance: str, counters: list | None = None, customer: str = "acct-1", **fields):
    body = {"customer": customer, "operation": "Sync", "instance": instance, "counters": counters or [], **fields}
    return api.post("/api/v1/sync", body, format="json")


def _counter(entry: dict, count: int, count_prev: int = 0) -> dict:
    length = entry["window_end"] - entry["window_start"]
    return {
        "limit": entry["limit"], "window_start": entry["window_start"],
        "prev_window_start": entry["window_start"] - length, "count": count, "count_prev": count_prev,
    }  # fmt: skip


def _check(api, customer: str = "acct-1") -> bool:
    return bool(api.post("/api/v1/check", {"customer": customer, "operation": "Sync"}, format="json").json()["allowed"])


def _hashes(redis_client, key_prefix) -> dict:
    return {key: redis_client.hgetall(key) for key in redis_client.scan_iter(match=f"{key_prefix}:h:*")}


def _instances(fields: dict) -> list[bytes]:
    """The instance entries of an exchange hash (names starting with "~" hold the store's own sums)."""
    return [name for name in fields if not name.startswith(b"~")]


@pytest.mark.slow
def test_1100_instances_reporting_the_largest_count_cannot_wrap_a_sum(api) -> None:
    _hybrid("burst", 30, [])
    entry = _sync(api, "probe").json()["limits"][0]

    answers = [_sync(api, f"i-{n}", [_counter(entry, HUGE)]).status_code for n in range(1100)]
    honest = _sync(api, "honest", [_counter(entry, 30)])  # an SDK limiter that admitted the whole limit
    admitted = sum(_check(api) for _ in range(60))  # the API worker, which learns the others' counts first

    assert set(answers) == {400}  # more than one instance can admit of 30 a minute
    assert honest.status_code == 200
    assert 30 + admitted <= 30  # before: the sum wrapped to -2**63, so the worker admitted 30 more


@pytest.mark.slow
def test_a_counter_keeps_a_bounded_number_of_instances_and_its_sums_saturate(api, redis_client, key_prefix) -> None:
    _hybrid("burst", 30, [])
    entry = _sync(api, "probe").json()["limits"][0]

    last = None
    for n in range(MAX_INSTANCES + 100):
        last = _sync(api, f"i-{n}", [_counter(entry, 30, 30)])
        assert last.status_code == 200
    admitted = sum(_check(api) for _ in range(60))

    (fields,) = _hashes(redis_client, key_prefix).values()
    assert len(_instances(fields)) == MAX_INSTANCES
    answer = last.json()["limits"][0]
    assert answer["instances"] == MAX_INSTANCES
    # What the instances dropped from the bound had counted still weighs: the others hold the whole limit.
    assert answer["others"] == 30 * (MAX_INSTANCES + 99)
    assert admitted == 0


def test_a_count_above_the_quantity_is_refused_with_400_and_writes_nothing(api, redis_client, key_prefix) -> None:
    _hybrid("burst", 30, ["customer"])
    entry = _sync(api, "a").json()["limits"][0]
    before = _hashes(redis_client, key_prefix)

    over = _sync(api, "a", [_counter(entry, 31)])
    over_prev = _sync(api, "a", [_counter(entry, 1, count_prev=31)])

    assert over.status_code == over_prev.status_code == 400
    assert "count" in over.json()["error"]["fields"]["counters"]["0"]
    assert "30" in over.json()["error"]["fields"]["counters"]["0"]["count"][0]
    assert "count_prev" in over_prev.json()["error"]["fields"]["counters"]["0"]
    assert _hashes(redis_client, key_prefix) == before
    assert _sync(api, "a", [_counter(entry, 30, 30)]).status_code == 200  # the quantity itself is a count


def test_a_shadow_limits_count_above_the_quantity_is_taken_as_the_quantity(api) -> None:
    _hybrid("watch", 30, ["customer"], mode=Mode.SHADOW)
    entry = _sync(api, "a").json()["limits"][0]

    reported = _sync(api, "a", [_counter(entry, 500)])
    seen = _sync(api, "b", [_counter(entry, 0)]).json()["limits"][0]

    assert reported.status_code == 200
    assert seen["others"] == 30


def test_a_customer_bound_key_is_refused_on_a_limit_shared_by_several_customers(
    api, customer_key, redis_client, key_prefix
) -> None:
    _hybrid("global", 10, [])
    tenant = client_with(customer_key)
    entry = _sync(api, "service").json()["limits"][0]
    before = _hashes(redis_client, key_prefix)

    reported = _sync(tenant, "mine", [_counter(entry, 10)])
    looked = _sync(tenant, "mine")

    for response in (reported, looked):
        assert response.status_code == 403
        error = response.json()["error"]
        assert error["code"] == "shared_limit"
        assert "global" in error["message"]
        assert "service-wide" in error["message"]
    assert _hashes(redis_client, key_prefix) == before
    assert sum(_check(api, "acct-2") for _ in range(10)) == 10  # the other tenants' share is untouched


def test_a_customer_bound_key_reports_on_its_own_customers_counter(api, customer_key) -> None:
    _hybrid("own", 10, ["customer"])
    tenant = client_with(customer_key)
    entry = _sync(tenant, "mine").json()["limits"][0]

    assert _sync(tenant, "mine", [_counter(entry, 4)]).status_code == 200
    assert _sync(api, "service", [_counter(entry, 0)]).json()["limits"][0]["others"] == 4


def _usage_costs() -> dict[str, int]:
    decision_ledger.flush()
    totals: dict[str, int] = {}
    for row in UsageMinute.objects.filter(customer="acct-1", operation="Sync"):
        for unit, amount in row.costs.items():
            totals[unit] = totals.get(unit, 0) + amount
    return totals


def test_counters_moved_without_a_usage_report_still_end_in_usage(api) -> None:
    _hybrid("own", 30, ["customer"])
    entry = _sync(api, "a").json()["limits"][0]

    _sync(api, "a", [_counter(entry, 7)])
    _sync(api, "a", [_counter(entry, 7)])  # a retry: absolute counts add nothing
    _sync(api, "a", [_counter(entry, 5)])  # a count going down gives nothing back either
    _sync(api, "a", [_counter(entry, 12)])

    assert _usage_costs() == {"requests": 12}


def test_a_usage_report_and_the_counters_it_describes_are_counted_once(api) -> None:
    _hybrid("own", 30, ["customer"])
    entry = _sync(api, "a").json()["limits"][0]

    _sync(api, "a", [_counter(entry, 4)], usage={"sequence": 1, "allowed": 4, "costs": {"requests": 4}})
    _sync(api, "a", [_counter(entry, 9)])  # the next report is late: the counters are counted now
    _sync(api, "a", [_counter(entry, 9)], usage={"sequence": 2, "allowed": 5, "costs": {"requests": 5}})
    _sync(api, "a", [_counter(entry, 9)], usage={"sequence": 3, "allowed": 2, "costs": {"requests": 2}})

    assert _usage_costs() == {"requests": 11}  # 9 by the counters, then 2 more than they showed by the reports
    decision_ledger.flush()
    allowed = UsageMinute.objects.filter(customer="acct-1", operation="Sync").aggregate(n=Sum("allowed"))["n"]
    assert allowed == 11  # the decisions the reports name


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_usage_report_answered_503_while_redis_was_paused_is_counted_when_sent_again(
    service_key, engine, settings, key_prefix
) -> None:
    """The report's id was remembered by a plain SET NX: sent while Redis was paused, it timed out (503), ran when
    Redis resumed, and the resend found the id taken: the report was never counted."""
    server = RedisServer().start()
    settings.COUNTERS_REDIS_URL = server.url
    settings.QUOTA_REDIS_TIMEOUT_MS = 50
    hybrid.hybrid_reset()
    try:
        _hybrid("own", 30, ["customer"])
        api = client_with(service_key)
        report = {"sequence": 1, "allowed": 3, "costs": {"requests": 3}}
        assert _sync(api, "a").status_code == 200  # scripts loaded, connections open
        client = hybrid_stores.counters_redis()
        _open_connections(client, 4)
        server.signal(signal.SIGSTOP)
        try:
            paused = _sync(api, "a", usage=report)
        finally:
            time.sleep(0.3)
            server.signal(signal.SIGCONT)
        time.sleep(0.2)  # Redis runs what it read while paused
        again = _sync(api, "a", usage=report)
    finally:
        hybrid.hybrid_reset()
        server.cleanup()

    assert paused.status_code == 503
    assert again.status_code == 200
    assert _usage_costs() == {"requests": 3}


def _open_connections(client: redis.Redis, count: int) -> None:
    """Pooled connections opened now: a command sent on one while Redis sleeps is read when it resumes."""
    pool = client.connection_pool
    opened = [pool.get_connection() for _ in range(count)]
    for one in opened:
        one.send_command("PING")
        one.read_response()
        pool.release(one)
