"""ProducerShaper (local buckets per key and unit, the Kinesis producer library's rate limiting) on an injected
clock, against a reference token bucket in exact arithmetic, and put_all shaped by it."""

import asyncio
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quota_client import AsyncQuotaClient, CheckItem, ExponentialBackoff, ProducerShaper, QuotaClient

from tests.clients.fakes import BucketPlatform, FakeClock, ScriptedTransport

MIB = 1_048_576


def put(records: int = 1, size: int = 100, *, customer: str = "acct-1", shard: str = "shard-1", **extra) -> CheckItem:
    return CheckItem(customer, "PutRecords", shard, costs={"records": records, "bytes": size}, **extra)


def shaper(clock: FakeClock, limits=None, **options) -> ProducerShaper:
    return ProducerShaper(limits or {"records": 1000, "bytes": MIB}, clock=clock, **options)


# -- the buckets -----------------------------------------------------------------------------------------------
def test_a_fresh_bucket_holds_one_and_a_half_times_the_limit_by_default() -> None:
    shaped = shaper(FakeClock())

    assert shaped.share == 1.5
    assert shaped.tokens(put(), "records") == 1500  # 150 % of 1000 records
    assert shaped.take([put(1000), put(500)]) == 0.0
    assert shaped.take([put(1)]) == pytest.approx(1 / 1500)  # empty: it refills at 1500 records/s


def test_it_refills_at_the_share_of_the_limit_per_period() -> None:
    clock = FakeClock()
    shaped = shaper(clock, {"records": 100}, share=1.0, period_s=2.0)
    assert shaped.take([put(100)]) == 0.0

    wait = shaped.take([put(10)])

    assert wait == pytest.approx(0.2)  # 100 per 2 s: 10 records take 0.2 s
    clock.sleep(wait)
    assert shaped.take([put(10)]) == 0.0
    assert shaped.tokens(put(), "records") == pytest.approx(0.0)


def test_records_and_bytes_have_their_own_buckets_and_the_tighter_one_binds() -> None:
    clock = FakeClock()
    shaped = shaper(clock, share=1.0)

    assert shaped.take([put(10, MIB)]) == 0.0  # 10 records, the whole byte bucket

    assert shaped.tokens(put(), "records") == pytest.approx(990)
    assert shaped.take([put(1, 1024)]) == pytest.approx(1024 / MIB)  # records to spare, bytes not
    assert shaped.take([put(1, 0)]) == 0.0  # a record of no bytes needs only a record


def test_each_key_has_its_own_buckets() -> None:
    shaped = shaper(FakeClock(), share=1.0)
    assert shaped.take([put(1000)]) == 0.0

    assert shaped.take([put(1000, shard="shard-2")]) == 0.0
    assert shaped.take([put(1000, customer="acct-2")]) == 0.0
    assert shaped.take([put(1000, attributes={"region": "eu"})]) == 0.0
    assert shaped.take([put(1)]) > 0


def test_a_take_is_all_or_nothing() -> None:
    shaped = shaper(FakeClock(), share=1.0)
    assert shaped.take([put(990, shard="shard-2")]) == 0.0

    assert shaped.take([put(500), put(20, shard="shard-2")]) > 0  # shard-2 has only 10 left

    assert shaped.tokens(put(), "records") == 1000  # shard-1 gave nothing
    assert shaped.tokens(put(shard="shard-2"), "records") == pytest.approx(10)


def test_units_it_is_not_given_are_not_shaped_and_requests_count_one_per_check() -> None:
    shaped = shaper(FakeClock(), {"requests": 2}, share=1.0)

    assert shaped.take([put(10_000, 10**9), put(10_000, 10**9)]) == 0.0
    assert shaped.take([CheckItem("acct-1", "PutRecords", "shard-1")]) > 0
    assert shaped.take([CheckItem("acct-1", "Other", costs={"requests": 0})]) == 0.0


def test_a_send_costlier_than_a_bucket_waits_for_a_full_bucket_then_leaves_a_debt() -> None:
    clock = FakeClock()
    shaped = shaper(clock, {"records": 100}, share=1.0)
    shaped.take([put(50)])

    wait = shaped.take([put(250)])
    assert wait == pytest.approx(0.5)  # until the bucket is full again, not forever
    clock.sleep(wait)
    assert shaped.take([put(250)]) == 0.0

    assert shaped.tokens(put(), "records") == pytest.approx(-150)
    assert shaped.take([put(1)]) == pytest.approx(1.51)  # the debt, then one record


def test_bad_settings_are_refused_with_the_name_of_the_setting() -> None:
    for options, message in [
        ({"limits": {}}, "limits"),
        ({"limits": {"records": 0}}, "limit"),
        ({"limits": {"records": 10}, "share": 0}, "share"),
        ({"limits": {"records": 10}, "period_s": -1}, "period_s"),
        ({"limits": {"records": 10}, "max_keys": 0}, "max_keys"),
    ]:
        with pytest.raises(ValueError, match=message):
            ProducerShaper(**options)


def test_a_negative_cost_is_refused_and_takes_nothing() -> None:
    shaped = shaper(FakeClock(), share=1.0)

    with pytest.raises(ValueError, match="zero or more"):
        shaped.take([put(10), put(-5, shard="shard-2")])

    assert shaped.bucket_count == 0


def test_full_buckets_are_forgotten_above_max_keys() -> None:
    clock = FakeClock()
    shaped = shaper(clock, {"records": 10}, share=1.0, max_keys=4)
    for shard in range(4):
        shaped.take([put(5, shard=f"shard-{shard}")])
    clock.sleep(0.5)  # shards 0-3 are full again
    shaped.take([put(10, shard="busy")])

    assert shaped.bucket_count == 1  # only the busy shard's bucket is left: a full bucket is the same as none
    assert shaped.take([put(10, shard="shard-0")]) == 0.0


# -- against a reference model -----------------------------------------------------------------------------------
class ReferenceBuckets:
    """A token bucket per key and unit in exact arithmetic, refilled step by step: the plain definition."""

    def __init__(self, limits: dict[str, int], share: Fraction, period: Fraction) -> None:
        self.capacity = {unit: limit * share for unit, limit in limits.items()}
        self.rate = {unit: capacity / period for unit, capacity in self.capacity.items()}
        self.tokens: dict[tuple[str, str], Fraction] = {}
        self.at: dict[tuple[str, str], Fraction] = {}

    def level(self, bucket: tuple[str, str], now: Fraction) -> Fraction:
        unit = bucket[1]
        if bucket not in self.tokens:
            return self.capacity[unit]
        return min(self.capacity[unit], self.tokens[bucket] + (now - self.at[bucket]) * self.rate[unit])

    def margins(self, needs: dict[tuple[str, str], int], now: Fraction) -> dict[tuple[str, str], Fraction]:
        """Tokens left over (negative: short) per bucket that the send needs anything from."""
        return {
            bucket: self.level(bucket, now) - min(need, self.capacity[bucket[1]])
            for bucket, need in needs.items()
            if need
        }

    def apply(self, needs: dict[tuple[str, str], int], now: Fraction) -> None:
        for bucket, need in needs.items():
            if need:
                self.tokens[bucket] = self.level(bucket, now) - need
                self.at[bucket] = now


send = st.lists(
    st.tuples(st.sampled_from(["shard-1", "shard-2"]), st.integers(0, 30), st.integers(0, 3000)), min_size=1, max_size=3
)


@settings(max_examples=300, deadline=None)
@given(
    records=st.sampled_from([1, 3, 10, 25]),
    byte_limit=st.sampled_from([7, 1000, 2048]),
    share=st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(2)]),
    period=st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(3)]),
    steps=st.lists(st.tuples(st.integers(0, 1500), send), min_size=1, max_size=40),
)
def test_it_decides_and_waits_as_a_plain_token_bucket_would(records, byte_limit, share, period, steps) -> None:
    now_ms = 0
    shaped = ProducerShaper(
        {"records": records, "bytes": byte_limit},
        share=float(share),
        period_s=float(period),
        clock=lambda: now_ms / 1000,
    )
    reference = ReferenceBuckets({"records": records, "bytes": byte_limit}, share, period)
    for advance_ms, sent in steps:
        now_ms += advance_ms
        now = Fraction(now_ms, 1000)
        items = [put(count, size, shard=shard) for shard, count, size in sent]
        needs: dict[tuple[str, str], int] = {}
        for shard, count, size in sent:
            needs[(shard, "records")] = needs.get((shard, "records"), 0) + count
            needs[(shard, "bytes")] = needs.get((shard, "bytes"), 0) + size
        margins = reference.margins(needs, now)
        expected_wait = max([-margin / reference.rate[bucket[1]] for bucket, margin in margins.items()], default=0)

        wait = shaped.take(items)

        # A send within a nanosecond's worth of tokens of the boundary may go either way (floats): follow it.
        close_call = any(
            abs(margin) < reference.rate[bucket[1]] * Fraction(1, 10**8) for bucket, margin in margins.items()
        )
        if not close_call:
            assert (wait == 0) == (expected_wait <= 0), (margins, wait)
            assert wait == pytest.approx(float(max(expected_wait, 0)), abs=1e-9)
        if wait == 0:
            reference.apply(needs, now)
            for bucket in needs:
                assert shaped.tokens(put(shard=bucket[0]), bucket[1]) == pytest.approx(
                    float(reference.level(bucket, now)), abs=1e-6
                )


@settings(max_examples=200, deadline=None)
@given(
    share=st.sampled_from([0.5, 1.0, 1.5]),
    sends=st.lists(st.tuples(st.integers(1, 400), st.floats(0, 0.3)), min_size=1, max_size=60),
)
def test_what_it_lets_through_stays_within_capacity_plus_refill(share, sends) -> None:
    # Whatever the sends and the pauses, over the whole run: sent ≤ capacity + rate × elapsed (each send within
    # the capacity: a costlier one goes alone on a full bucket and leaves a debt, checked above).
    clock = FakeClock()
    shaped = shaper(clock, {"records": 100}, share=share)
    start, sent = clock(), 0
    for count, pause in sends:
        clock.sleep(pause)
        item = put(min(count, int(100 * share)))
        while (wait := shaped.take([item])) > 0:
            clock.sleep(wait)
        sent += item.costs["records"]
        assert sent <= 100 * share + 100 * share * (clock() - start) + 1e-6


# -- put_all shaped --------------------------------------------------------------------------------------------------
def pushed(count: int, seed: int = 4) -> list[CheckItem]:
    sizes = random.Random(seed)
    return [put(1, sizes.randint(100, 1900)) for _ in range(count)]


def shaped_run(share: float | None, count: int = 5000, **options):
    clock = FakeClock()
    platform = BucketPlatform(clock, {"records": (1000.0, 1000.0), "bytes": (MIB, MIB)}, latency_s=0.09)
    producer = None if share is None else shaper(clock, share=share)
    client = QuotaClient(
        "http://quota.test", "k", transport=platform, clock=clock, sleep=clock.sleep,
        backoff=ExponentialBackoff(initial_s=0.05, multiplier=2, max_s=0.5), shaper=producer, **options,
    )  # fmt: skip
    return client.put_all(pushed(count)), platform, clock


def test_put_all_with_a_shaper_at_the_limit_is_hardly_ever_refused() -> None:
    plain, _, _ = shaped_run(None)
    kpl, _, _ = shaped_run(1.5)
    exact, platform, _ = shaped_run(1.0)

    for result in (plain, kpl, exact):
        assert sorted(result.admitted) == list(range(5000))
    assert platform.admitted_costs["records"] == 5000
    assert plain.resubmitted > kpl.resubmitted > exact.resubmitted
    assert exact.resubmitted == 0
    assert exact.shaped_s > 0
    assert exact.shaper_waits > 0
    assert exact.elapsed_s <= plain.elapsed_s * 1.05  # shaping costs no time: the limit is the limit


def test_put_all_sends_no_more_than_the_shaper_allows() -> None:
    result, platform, _ = shaped_run(1.5)

    sends = platform.decided  # every submission, first ones and resubmissions
    assert sends == 5000 + result.resubmitted
    assert sends <= 1500 + 1500 * result.elapsed_s


def test_a_shaped_round_keeps_each_keys_items_in_order_and_other_keys_go_on() -> None:
    clock = FakeClock()
    platform = BucketPlatform(clock, {"bytes": (20_000.0, 20_000.0)})  # one bucket for all keys: never the binding one
    producer = ProducerShaper({"bytes": 10_000}, share=1.0, clock=clock)
    client = QuotaClient("http://quota.test", "k", transport=platform, clock=clock, sleep=clock.sleep)
    # shard-1: 6,000 + 6,000 bytes (never both in one round); shard-2: small records.
    items = [put(1, 6000), put(1, 6000), put(1, 10, shard="shard-2"), put(1, 10, shard="shard-2")]

    result = client.put_all(items, shaper=producer)

    assert result.admitted == [0, 2, 3, 1]
    assert result.resubmitted == 0
    # shard-1's second record waited for 2,000 more bytes (0.2 s), less the first request's 10 ms.
    assert result.shaped_s == pytest.approx(0.19)


def test_put_all_refuses_a_negative_cost_before_sending_anything() -> None:
    transport = ScriptedTransport()
    client = QuotaClient("http://quota.test", "k", transport=transport, shaper=ProducerShaper({"records": 10}))

    with pytest.raises(ValueError, match="zero or more"):
        client.put_all([put(1), put(-1)])

    assert transport.sent == []


def test_async_put_all_awaits_the_shaper() -> None:
    clock = FakeClock()
    platform = BucketPlatform(clock, {"records": (100.0, 100.0)})
    awaited: list[float] = []

    async def sleep(seconds: float) -> None:
        awaited.append(seconds)
        clock.sleep(seconds)

    client = AsyncQuotaClient(
        "http://quota.test", "k", transport=platform, clock=clock, sleep=sleep,
        shaper=ProducerShaper({"records": 100}, share=1.0, clock=clock),
    )  # fmt: skip

    result = asyncio.run(client.put_all([put() for _ in range(300)], batch_size=100))

    assert sorted(result.admitted) == list(range(300))
    assert result.resubmitted == 0
    assert result.shaper_waits == 2
    assert sum(awaited) == pytest.approx(result.shaped_s)
