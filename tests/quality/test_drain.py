"""The drain: real Redis streams into real PostgreSQL, stored once, trimmed after, safe when interrupted."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection

from apps.quality.models import DecisionEvent
from apps.quality.selectors import at_ms_of
from apps.quality.services.drain import id_after, log_streams
from apps.quality.services.partitions import DECISION_EVENTS, day_partitions
from tests.quality.logs import decision, drain, lease, minute_ms, stream_of, write

pytestmark = pytest.mark.django_db(transaction=True)


class Killed(Exception):
    pass


def now_ms() -> int:
    return minute_ms(dt.datetime.now(dt.UTC)) - 5 * 60_000


def test_entries_are_stored_with_their_fields_and_trimmed_from_redis(redis_client, key_prefix) -> None:
    start = now_ms()
    ids = write(redis_client, key_prefix, decision(start + 5, "allow"), decision(start + 9, "deny"))
    write(redis_client, key_prefix, lease(start + 7, "acquire", "m1", customer="bob", expires_ms=start + 30_000),
          customer="bob")  # fmt: skip

    report = drain(redis_client, key_prefix)

    assert (report.streams, report.read, report.inserted, report.trimmed, report.malformed) == (2, 3, 3, 3, 0)
    assert redis_client.xlen(stream_of(key_prefix)) == 0
    stored = DecisionEvent.objects.get(slot=stream_of(key_prefix), entry_id=ids[1])  # ids repeat across streams
    assert (stored.slot, stored.kind, stored.customer, stored.limit, stored.algorithm) == (
        stream_of(key_prefix), "deny", "acme", "per-minute", "fixed_window"
    )  # fmt: skip
    assert (at_ms_of(stored.at), stored.quantity, stored.period_ms, stored.window_ms) == (start + 9, 2, 60_000, start)
    held = DecisionEvent.objects.get(kind="acquire")
    assert (held.customer, held.lease, held.expires_ms, held.slot) == ("bob", "m1", start + 30_000,
                                                                      stream_of(key_prefix, "bob"))  # fmt: skip


def test_a_second_drain_stores_nothing_twice_and_takes_only_what_came_since(redis_client, key_prefix) -> None:
    start = now_ms()
    write(redis_client, key_prefix, decision(start), decision(start + 1))
    drain(redis_client, key_prefix)
    write(redis_client, key_prefix, decision(start + 2))

    report = drain(redis_client, key_prefix)

    assert (report.read, report.inserted) == (1, 1)
    assert DecisionEvent.objects.count() == 3


def test_a_drain_killed_between_insert_and_trim_is_finished_by_the_next_without_duplicates(
    redis_client, key_prefix
) -> None:
    start = now_ms()
    write(redis_client, key_prefix, *[decision(start + n) for n in range(7)])

    def killed_after_insert(step: str, stream: str) -> None:
        if step == "inserted":
            raise Killed

    first = drain(redis_client, key_prefix, page=3, checkpoint=killed_after_insert)
    assert first.failed_streams == [stream_of(key_prefix)]
    assert DecisionEvent.objects.count() == 3
    assert redis_client.xlen(stream_of(key_prefix)) == 7  # nothing trimmed: the page is read again

    second = drain(redis_client, key_prefix, page=3)

    assert (second.read, second.inserted, second.trimmed) == (7, 4, 7)
    assert DecisionEvent.objects.count() == 7
    assert redis_client.xlen(stream_of(key_prefix)) == 0


def test_pages_are_drained_to_the_end_and_entries_added_meanwhile_survive_the_trim(redis_client, key_prefix) -> None:
    start = now_ms()
    write(redis_client, key_prefix, *[decision(start + n) for n in range(5)])
    late: list[str] = []

    def add_while_draining(step: str, stream: str) -> None:
        if step == "inserted" and not late:
            late.extend(write(redis_client, key_prefix, decision(start + 100)))

    report = drain(redis_client, key_prefix, page=2, checkpoint=add_while_draining)

    assert report.read == 6  # the late entry is past the pages read before it came: read by the last page
    assert DecisionEvent.objects.count() == 6


def test_an_entry_added_after_the_last_page_stays_in_redis_for_the_next_drain(redis_client, key_prefix) -> None:
    start = now_ms()
    write(redis_client, key_prefix, decision(start))
    late: list[str] = []

    def add_after_insert(step: str, stream: str) -> None:
        if step == "inserted" and not late:
            late.extend(write(redis_client, key_prefix, decision(start + 1)))

    drain(redis_client, key_prefix, checkpoint=add_after_insert)

    remaining = [entry_id.decode() for entry_id, _ in redis_client.xrange(stream_of(key_prefix))]
    assert remaining == late
    assert DecisionEvent.objects.count() == 1


def test_a_malformed_entry_is_counted_and_trimmed_and_does_not_block_the_stream(redis_client, key_prefix) -> None:
    start = now_ms()
    redis_client.xadd(stream_of(key_prefix), {"e": "allow", "c": "acme"})  # no time
    write(redis_client, key_prefix, decision(start))

    report = drain(redis_client, key_prefix)

    assert (report.read, report.inserted, report.malformed) == (2, 1, 1)
    assert redis_client.xlen(stream_of(key_prefix)) == 0


def test_other_prefixes_streams_are_left_alone(redis_client, key_prefix) -> None:
    other = key_prefix + "x"
    write(redis_client, other, decision(now_ms()))
    try:
        report = drain(redis_client, key_prefix)
        assert report.streams == 0
        assert redis_client.xlen(stream_of(other)) == 1
    finally:
        redis_client.delete(stream_of(other))


def test_entries_land_in_their_day_partition() -> None:
    days = {partition.day for partition in day_partitions(table=DECISION_EVENTS)}
    today = dt.datetime.now(dt.UTC).date()
    assert {today - dt.timedelta(days=1), today, today + dt.timedelta(days=1)} <= days
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE relname = %s", [DECISION_EVENTS.parent])
        assert cursor.fetchone() == ("p",)


def test_id_after_is_the_next_possible_stream_id() -> None:
    assert id_after("1700000000000-0") == "1700000000000-1"
    assert id_after("5-41") == "5-42"


def test_a_cluster_drain_finds_the_streams_of_every_primary(cluster_client, cluster_prefix) -> None:
    start = now_ms()
    customers = [f"c{n}" for n in range(12)]  # spread over the three masters' slots
    for customer in customers:
        write(cluster_client, cluster_prefix, decision(start, customer=customer), customer=customer)
    nodes = {cluster_client.get_node_from_key(stream_of(cluster_prefix, c)).name for c in customers}

    report = drain(cluster_client, cluster_prefix)

    assert len(nodes) > 1
    assert len(log_streams(cluster_client, cluster_prefix)) == len(customers)
    assert (report.streams, report.inserted) == (len(customers), len(customers))
    assert sorted(DecisionEvent.objects.values_list("customer", flat=True)) == sorted(customers)
    assert all(cluster_client.xlen(stream_of(cluster_prefix, c)) == 0 for c in customers)
