"""Reading the stored log back for the audit: one stream per slot, each in (at, entry_id) order, times exact."""

from __future__ import annotations

import datetime as dt
import types

import pytest
from django.db import transaction

from apps.customers.models import Customer, Plan
from apps.quality.analysis.events import Event
from apps.quality.models import DecisionEvent
from apps.quality.selectors import LogFilters, customer_groups, group_customers, log_slot_streams

pytestmark = pytest.mark.django_db

BASE_MS = 1_764_000_000_123  # an odd millisecond: a float round trip would show


def stored(slot: str, entry_id: str, at_ms: int, **fields: object) -> None:
    at = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=at_ms)
    DecisionEvent.objects.create(slot=slot, entry_id=entry_id, at=at, **{"kind": "allow", **fields})


def read(**filters: object) -> dict[str, list[tuple[int, str, str]]]:
    start = dt.datetime.fromtimestamp(BASE_MS // 1000 - 60, tz=dt.UTC)
    window = LogFilters(start, start + dt.timedelta(hours=1), **filters)  # type: ignore[arg-type]
    with transaction.atomic():
        streams = log_slot_streams(filters=window)
        assert all(isinstance(stream, types.GeneratorType) for stream in streams)  # lazy, not lists
        return {events[0].key: [(e.at_ms, e.kind, e.lease) for e in events] for events in map(list, streams)}


def test_each_slot_comes_in_time_then_id_order_with_exact_milliseconds() -> None:
    stored("s1", "9-0", BASE_MS + 5, key="a", kind="deny")
    stored("s2", "1-0", BASE_MS + 1, key="b")
    stored("s1", "3-0", BASE_MS, key="a", kind="acquire", lease="m1")
    stored("s1", "2-1", BASE_MS + 5, key="a")

    streams = read()

    assert streams == {
        "a": [(BASE_MS, "acquire", "m1"), (BASE_MS + 5, "allow", ""), (BASE_MS + 5, "deny", "")],
        "b": [(BASE_MS + 1, "allow", "")],
    }


def test_events_carry_every_column() -> None:
    stored("s1", "1-0", BASE_MS, customer="acme", operation="Put", limit="l", algorithm="token_bucket", key="k",
           cost=3, quantity=10, period_ms=1000, burst=20, window_ms=7, shadow=True, mode="exact", instance="n:1",
           lease="m", expires_ms=99)  # fmt: skip
    start = dt.datetime.fromtimestamp(BASE_MS // 1000 - 60, tz=dt.UTC)

    with transaction.atomic():
        (stream,) = log_slot_streams(filters=LogFilters(start, start + dt.timedelta(hours=1)))
        (event,) = list(stream)

    assert event == Event(BASE_MS, "allow", "acme", "Put", "l", "token_bucket", "k", 3, 10, 1000, 20, 7, True,
                          "exact", "n:1", "m", 99)  # fmt: skip


def test_a_limit_filter_keeps_the_expiries_that_name_no_limit() -> None:
    stored("s1", "1-0", BASE_MS, key="a", kind="acquire", limit="sessions", lease="m1")
    stored("s1", "2-0", BASE_MS + 1, key="a", kind="expire", limit="", lease="m1")
    stored("s1", "3-0", BASE_MS + 2, key="a", kind="allow", limit="other")

    assert read(limit="sessions") == {"a": [(BASE_MS, "acquire", "m1"), (BASE_MS + 1, "expire", "m1")]}


def test_groups_are_the_customers_plans() -> None:
    gold = Plan.objects.create(name="gold")
    Customer.objects.create(external_id="acme", plan=gold)
    Customer.objects.create(external_id="bob")

    assert customer_groups() == {"acme": "gold", "bob": "(no plan)"}
    assert group_customers("gold") == ("acme",)
    assert group_customers("(no plan)") == ("bob",)
