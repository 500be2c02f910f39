"""put_all (Kinesis PutRecords style) against an in-memory token-bucket platform on a fake clock."""

import random

import pytest
from quota_client import CheckItem, ExponentialBackoff, QuotaClient, ResponsiveBackoff

from tests.clients.fakes import BucketPlatform, FakeClock, ScriptedTransport

RECORDS = {"records": (100.0, 100.0)}


def records(count: int, *, size: int | None = None, seed: int = 1) -> list[CheckItem]:
    sizes = random.Random(seed)
    return [
        CheckItem("acct-1", "PutRecords", "shard-1", costs={"records": 1, "bytes": size or sizes.randint(1, 1000)})
        for _ in range(count)
    ]


def setup(buckets=RECORDS, *, lose=(), **options) -> tuple[QuotaClient, BucketPlatform, FakeClock]:
    clock = FakeClock()
    platform = BucketPlatform(clock, dict(buckets), lose=set(lose))
    options.setdefault("backoff", ExponentialBackoff(initial_s=0.05, multiplier=2, max_s=0.5))
    client = QuotaClient("http://quota.test", "k", transport=platform, clock=clock, sleep=clock.sleep, **options)
    return client, platform, clock


def test_every_item_gets_through_once_and_only_refused_items_are_resubmitted() -> None:
    client, platform, _ = setup()
    items = records(350)

    result = client.put_all(items, batch_size=200)

    assert sorted(result.admitted) == list(range(350))
    assert result.all_admitted
    assert result.failed == {}
    assert platform.admitted_costs["records"] == 350
    assert platform.decided == 350 + result.resubmitted


def test_it_finishes_close_to_the_time_the_limit_allows() -> None:
    client, _, clock = setup()

    result = client.put_all(records(600), batch_size=200)

    ideal_s = (600 - 100) / 100  # the bucket starts full
    assert ideal_s <= result.elapsed_s <= ideal_s * 1.1


def test_the_admission_order_is_reported_and_refused_items_come_later() -> None:
    client, _, _ = setup({"records": (100.0, 100.0), "bytes": (1000.0, 1000.0)})
    items = [CheckItem("a", "Op", costs={"records": 1, "bytes": 600 if i % 2 else 10}) for i in range(6)]

    result = client.put_all(items, batch_size=6)

    # the bytes bucket (1000) takes 0, 1 (10 + 600) and 2 (10), refuses 3 (600), takes 4 (10), refuses 5.
    assert result.admitted[:4] == [0, 1, 2, 4]
    assert sorted(result.admitted[4:]) == [3, 5]


def test_a_resubmission_carries_a_new_request_id_and_a_lost_answer_is_replayed_not_recounted() -> None:
    client, platform, _ = setup(lose={1, 3, 4})
    sent_ids: list[str] = []
    original = platform.request

    def spy(method, url, *, body, headers, timeout_s):
        import json

        sent_ids.extend(item["request_id"] for item in json.loads(body)["items"])
        return original(method, url, body=body, headers=headers, timeout_s=timeout_s)

    platform.request = spy  # type: ignore[method-assign]

    result = client.put_all(records(300), batch_size=150)

    assert sorted(result.admitted) == list(range(300))
    assert platform.admitted_costs["records"] == 300  # three lost answers, nothing counted twice
    first_round = sent_ids[:150]
    assert first_round == sent_ids[150:300]  # the retry after the lost answer repeated the very same ids
    assert all(request_id.endswith(".0") for request_id in first_round)
    assert {request_id.rsplit(".", 1)[1] for request_id in sent_ids} > {"0", "1"}


def test_items_that_can_never_pass_are_reported_failed_without_retrying() -> None:
    client, platform, _ = setup({"records": (100.0, 100.0), "bytes": (1000.0, 1000.0)})
    items = [*records(3, size=10), CheckItem("acct-1", "PutRecords", costs={"records": 1, "bytes": 5000})]

    result = client.put_all(items)

    assert sorted(result.admitted) == [0, 1, 2]
    assert list(result.failed) == [3]
    assert result.failed[3].retry_after_ms is None
    assert platform.decided == 4


def test_the_retry_limit_counts_per_item() -> None:
    client, _, _ = setup(backoff=ExponentialBackoff(initial_s=0.001, max_s=0.001, max_retries=1))

    result = client.put_all(records(300), batch_size=300)

    assert len(result.admitted) + len(result.failed) == 300
    assert result.failed
    assert not result.all_admitted
    assert all(not decision.allowed for decision in result.failed.values())


def test_on_admitted_is_called_with_each_rounds_admitted_indexes() -> None:
    client, _, _ = setup()
    written: list[int] = []

    result = client.put_all(records(250), batch_size=100, on_admitted=written.extend)

    assert written == result.admitted


def test_it_reports_requests_rounds_and_the_sleep_total() -> None:
    client, _, clock = setup()

    result = client.put_all(records(300), batch_size=100)

    assert result.requests == result.rounds >= 3
    assert result.slept_s == pytest.approx(sum(clock.slept))
    assert result.backoff.total_sleep_s == pytest.approx(result.slept_s)


def test_the_responsive_policy_settles_into_fewer_refusals_than_plain_exponential() -> None:
    # Seeded jitter: the comparison is of the policies, not of two random draws.
    jitter = random.Random(7).random
    exponential, _, _ = setup(backoff=ExponentialBackoff(initial_s=0.05, multiplier=2, max_s=1.0, random=jitter))
    responsive, _, _ = setup(
        backoff=ResponsiveBackoff(0.05, 1.0, up=1.5, down=0.9, down_after=5, randomization=0, random=jitter)
    )

    plain = exponential.put_all(records(1500), batch_size=100)
    paced = responsive.put_all(records(1500), batch_size=100)

    assert plain.all_admitted
    assert paced.all_admitted
    assert paced.resubmitted < plain.resubmitted
    assert paced.backoff.times_down > 0


def test_batch_size_must_fit_the_platforms_batch_limit() -> None:
    client, _, _ = setup()

    with pytest.raises(ValueError, match="batch_size"):
        client.put_all(records(3), batch_size=1001)


def test_an_access_rule_denial_fails_the_items_at_once() -> None:
    from tests.clients.fakes import decision_body, respond

    denied = decision_body(False, code="DENIED", retry_after_ms=None, limits=[])
    transport = ScriptedTransport(respond(200, {"allowed_count": 0, "denied_count": 2, "results": [denied, denied]}))
    client = QuotaClient("http://quota.test", "k", transport=transport)

    result = client.put_all(records(2))

    assert result.admitted == []
    assert sorted(result.failed) == [0, 1]
    assert result.failed[0].denied


def test_with_the_default_policy_an_item_is_resubmitted_five_times_at_most() -> None:
    from tests.clients.fakes import decision_body, respond

    body = {"allowed_count": 0, "denied_count": 1, "results": [decision_body(False, retry_after_ms=10)]}
    refused = respond(200, body)
    transport = ScriptedTransport(*[refused] * 7)
    clock = FakeClock()
    client = QuotaClient("http://quota.test", "k", transport=transport, clock=clock, sleep=clock.sleep)

    result = client.put_all(records(1))

    assert list(result.failed) == [0]
    assert result.requests == 6  # the first submission and five resubmissions
    assert result.resubmitted == 5
