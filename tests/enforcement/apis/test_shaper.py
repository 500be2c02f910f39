"""Leaky bucket as a shaper (issue 18 item 4a): a check that fits within its max_wait_ms is admitted with the
delay_ms to wait, so admitted requests leave at the limit's rate; otherwise it is refused with the exact wait."""

import pytest

from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


def shaper(name="egress", quantity=1, period_seconds=1, burst=1, **fields):
    return LimitFactory(
        name=name, operation=OperationFactory(name="Send"), algorithm="leaky_bucket", quantity=quantity,
        period_seconds=period_seconds, burst=burst, key_by=["customer"], **fields,
    )  # fmt: skip


def check(api, **fields):
    return api.post("/api/v1/check", {"customer": "acct-1", "operation": "Send", **fields}, format="json")


def answers(api, times, **fields):
    bodies = [check(api, **fields).json() for _ in range(times)]
    return [(body["allowed"], body["delay_ms"], body["retry_after_ms"]) for body in bodies]


def test_without_max_wait_a_leaky_bucket_refuses_what_does_not_fit_now(api) -> None:
    shaper()

    assert answers(api, 2) == [(True, 0, 0), (False, 0, 1000)]


def test_with_max_wait_admitted_checks_are_spaced_at_the_rate_then_refused_exactly(api) -> None:
    shaper()

    assert answers(api, 4, max_wait_ms=2_500) == [(True, 0, 0), (True, 1000, 0), (True, 2000, 0), (False, 0, 500)]
    refused = check(api, max_wait_ms=2_500)
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "1"


def test_the_burst_leaves_at_once_and_the_rest_at_the_rate(api) -> None:
    shaper(quantity=10, burst=3)  # 10 per second: one every 100 ms after a burst of 3

    assert [delay for _, delay, _ in answers(api, 6, max_wait_ms=1_000)] == [0, 0, 0, 100, 200, 300]


def test_a_check_with_a_shaper_and_another_limit_is_all_or_nothing(api) -> None:
    shaper()
    LimitFactory(name="pair", operation=OperationFactory(name="Send"), quantity=2, key_by=["customer"])

    assert answers(api, 3, max_wait_ms=5_000) == [(True, 0, 0), (True, 1000, 0), (False, 0, 60_000)]
    # the third queued nothing on the shaper: it drains empty in 2 s (two checks), not 3
    limits = check(api, max_wait_ms=5_000, dry_run=True).json()["limits"]
    assert [limit["reset_ms"] for limit in limits if limit["name"] == "egress"] == [2000]


def test_the_delay_is_the_largest_of_the_checks_shapers(api) -> None:
    shaper()
    shaper(name="slower", quantity=1, period_seconds=3)

    assert [delay for _, delay, _ in answers(api, 2, max_wait_ms=5_000)] == [0, 3000]


def test_batch_items_carry_max_wait_and_queue_behind_each_other(api) -> None:
    shaper()
    item = {"customer": "acct-1", "operation": "Send", "max_wait_ms": 1_500}
    body = api.post("/api/v1/check/batch", {"items": [item] * 3}, format="json").json()

    assert [(r["allowed"], r["delay_ms"]) for r in body["results"]] == [(True, 0), (True, 1000), (False, 0)]
    assert body["results"][2]["retry_after_ms"] == 500


def test_an_atomic_batch_over_the_wait_admits_nothing_and_says_when_it_would_pass(api) -> None:
    shaper()
    check(api)  # the bucket is full for 1 s
    item = {"customer": "acct-1", "operation": "Send", "max_wait_ms": 1_000}
    body = api.post("/api/v1/check/batch", {"items": [item] * 2, "mode": "atomic"}, format="json").json()

    assert [r["code"] for r in body["results"]] == ["BATCH_REJECTED", "OVER_LIMIT"]
    # in 1 s the first leaves at once and the second within its wait
    assert [r["retry_after_ms"] for r in body["results"]] == [1000, 1000]
    limits = check(api, dry_run=True).json()["limits"]
    assert limits[0]["reset_ms"] == 1000  # nothing was queued


def test_an_atomic_batch_that_cannot_leave_within_its_waits_can_never_pass(api) -> None:
    shaper()
    item = {"customer": "acct-1", "operation": "Send", "max_wait_ms": 1_000}
    body = api.post("/api/v1/check/batch", {"items": [item] * 3, "mode": "atomic"}, format="json").json()

    # even from an empty bucket the third would leave 2 s after the first
    assert [r["code"] for r in body["results"]] == ["BATCH_REJECTED", "BATCH_REJECTED", "COST_EXCEEDS_LIMIT"]
    assert {r["retry_after_ms"] for r in body["results"]} == {None}


@pytest.mark.parametrize("bad", [-1, 60_001, "5", None, 1.5])
def test_a_bad_max_wait_is_refused_and_moves_nothing(api, bad) -> None:
    shaper()

    response = check(api, max_wait_ms=bad)

    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["max_wait_ms"]
    assert answers(api, 1) == [(True, 0, 0)]
