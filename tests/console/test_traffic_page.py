"""The platform traffic page: every customer's checks per second over time, per operation, the most throttled
customers, over preset and custom ranges, and its JSON twin for the live refresh. Real PostgreSQL, rows by factories."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from apps.console.traffic import STEPS, RangeInvalid, custom_window, rate_unit
from tests.customers.factories import CustomerFactory
from tests.usage.factories import UsageDayFactory, UsageHourFactory, UsageMinuteFactory

pytestmark = pytest.mark.django_db

PAGE = "console:traffic"
DATA = "console:traffic-data"
ZERO = dict.fromkeys(("allowed", "denied", "shadow_denied", "degraded", "rule_denied", "unavailable"), 0)


def url(name: str = PAGE, **query: str) -> str:
    return reverse(name) + ("?" + "&".join(f"{key}={value}" for key, value in query.items()) if query else "")


def minute(ago: int) -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=ago)


def hour(ago: int) -> dt.datetime:
    return timezone.now().replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=ago)


def usage(factory, bucket: dt.datetime, customer: str, operation: str, **counts: int):
    return factory(bucket=bucket, customer=customer, operation=operation, **{**ZERO, **counts})


def totals(response) -> dict[str, dict]:
    return {row["counter"]: row for row in response.context["totals"]}


def test_the_last_hour_adds_up_every_customer_per_minute_and_per_operation(admin_client) -> None:
    usage(UsageMinuteFactory, minute(5), "acct-1", "PutRecords", allowed=30, denied=6, degraded=2)
    usage(UsageMinuteFactory, minute(5), "acct-2", "PutRecords", allowed=10, rule_denied=1)
    usage(UsageMinuteFactory, minute(2), "acct-2", "ModifyShardCount", allowed=3, denied=3, unavailable=2)
    usage(UsageMinuteFactory, minute(90), "acct-1", "PutRecords", allowed=500)  # before the hour
    usage(UsageHourFactory, hour(0), "acct-1", "PutRecords", allowed=999)  # another table

    response = admin_client.get(url())

    assert response.status_code == 200
    assert response.context["window"].granularity == "minute"
    assert response.context["platform_checks"] == 30 + 6 + 10 + 1 + 3 + 3 + 2
    found = totals(response)
    assert {counter: row["count"] for counter, row in found.items()} == {
        **ZERO, "allowed": 43, "denied": 9, "degraded": 2, "rule_denied": 1, "unavailable": 2
    }  # fmt: skip
    assert found["allowed"]["peak_per_s"] == round(40 / 60, 3), "the busiest minute, per second"
    assert found["allowed"]["average_per_s"] == round(43 / 3600, 3)
    rows = {row["name"]: row for row in response.context["operation_rows"]}
    assert list(rows) == ["PutRecords", "ModifyShardCount"], "busiest first"
    assert (rows["PutRecords"]["checks"], rows["PutRecords"]["denied"], rows["PutRecords"]["degraded"]) == (47, 6, 2)
    assert rows["ModifyShardCount"]["denied_percent"] == 50
    page = response.content.decode()
    assert page.count('<svg class="usage-chart"') == 4, "the platform, one per operation, one per service"
    for series in ("allowed", "denied", "degraded", "rule_denied", "unavailable"):
        assert f'data-series="{series}"' in page
    assert "Usage rows do not record the calling service yet" not in page, (
        "they do (tests/console/test_traffic_by_service.py)"
    )


def test_rates_are_per_second_once_the_busiest_bucket_reaches_one_a_second(admin_client) -> None:
    usage(UsageMinuteFactory, minute(3), "acct-1", "PutRecords", allowed=150)

    response = admin_client.get(url())

    assert response.context["unit"] == "second"
    assert 'data-series="allowed" data-total="2.5"' in response.content.decode(), "150 in a minute: 2.5 a second"
    assert "checks per second" in response.content.decode()


def test_a_quiet_platform_is_charted_per_minute_not_in_fractions_of_a_check(admin_client) -> None:
    usage(UsageMinuteFactory, minute(3), "acct-1", "PutRecords", allowed=12)

    response = admin_client.get(url())

    assert response.context["unit"] == "minute"
    assert 'data-series="allowed" data-total="12"' in response.content.decode()
    assert totals(response)["allowed"]["peak_per_s"] == 0.2


@pytest.mark.parametrize(
    ("range_key", "factory", "bucket", "granularity"),
    [
        ("day", UsageHourFactory, lambda: hour(3), "hour"),
        ("30d", UsageDayFactory, lambda: hour(0).replace(hour=0) - dt.timedelta(days=4), "day"),
    ],
)
def test_longer_ranges_read_the_rolled_up_tables(admin_client, range_key, factory, bucket, granularity) -> None:
    usage(factory, bucket(), "acct-1", "PutRecords", allowed=7, denied=1)
    usage(UsageMinuteFactory, minute(1), "acct-1", "PutRecords", allowed=1000)  # not read for these ranges

    response = admin_client.get(url(range=range_key))

    assert response.context["window"].granularity == granularity
    assert totals(response)["allowed"]["count"] == 7
    assert response.context["throttled_rows"][0]["denied"] == 1


def test_a_custom_range_reads_the_table_its_length_calls_for_and_only_inside_it(admin_client) -> None:
    usage(UsageHourFactory, dt.datetime(2026, 3, 2, 10, tzinfo=dt.UTC), "acct-1", "PutRecords", allowed=4)
    usage(UsageHourFactory, dt.datetime(2026, 3, 4, 23, tzinfo=dt.UTC), "acct-1", "PutRecords", allowed=5)
    usage(UsageHourFactory, dt.datetime(2026, 3, 5, 0, tzinfo=dt.UTC), "acct-1", "PutRecords", allowed=60)

    response = admin_client.get(url(range="custom", **{"from": "2026-03-02T00:00", "to": "2026-03-05T00:00"}))

    window = response.context["window"]
    assert (window.key, window.granularity, window.live) == ("custom", "hour", False)
    assert window.start == dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
    assert window.end == dt.datetime(2026, 3, 5, tzinfo=dt.UTC)
    assert totals(response)["allowed"]["count"] == 9, "the hour at the end of the range is not in it"
    assert response.context["range_error"] == ""
    assert "A custom range is fixed" in response.content.decode()


@pytest.mark.parametrize(
    ("query", "sentence"),
    [
        ({"range": "week"}, "“week” is not a range this page offers"),
        ({"range": "custom", "from": "yesterday", "to": "2026-03-05"}, "Give “from” as a UTC date and time"),
        ({"range": "custom", "from": "2026-03-05", "to": "2026-03-01"}, "ends (2026-03-01 00:00) before it starts"),
        ({"range": "custom", "from": "2020-01-01", "to": "2026-03-01"}, "A custom range covers at most 1098 days"),
    ],
)
def test_a_range_the_page_cannot_show_says_why_and_shows_the_last_hour(admin_client, query, sentence) -> None:
    response = admin_client.get(url(**query))

    assert response.status_code == 200
    assert sentence in response.context["range_error"]
    assert response.context["window"].key == "hour"
    assert sentence in response.content.decode()


def test_the_most_throttled_customers_are_ranked_by_refusals_and_link_to_their_usage(admin_client) -> None:
    known = CustomerFactory(external_id="acct-heavy")
    usage(UsageMinuteFactory, minute(4), "acct-heavy", "PutRecords", allowed=10, denied=30)
    usage(UsageMinuteFactory, minute(4), "acct-" + "x" * 40, "PutRecords", allowed=90, denied=10)
    usage(UsageMinuteFactory, minute(4), "acct-calm", "PutRecords", allowed=50)

    response = admin_client.get(url())

    rows = response.context["throttled_rows"]
    assert [row["customer"] for row in rows] == ["acct-heavy", "acct-" + "x" * 40]
    assert rows[0]["usage_url"] == reverse("admin:customers_customer_usage", args=[known.pk])
    assert rows[0]["denied_percent"] == 75
    assert rows[1]["usage_url"] is None, "usage of a customer nobody configured: no page to link to"
    svg = str(response.context["throttled_svg"])
    assert 'data-label="acct-heavy" data-value="30"' in svg
    assert f'data-label="acct-{"x" * 16}…"' in svg, "a long id is shortened to 22 characters, to fit left of its bar"


def test_the_json_view_returns_the_same_numbers_and_the_live_part_to_swap_in(admin_client) -> None:
    usage(UsageMinuteFactory, minute(2), "acct-1", "PutRecords", allowed=8, denied=2)

    page = admin_client.get(url(range="hour"))
    data = admin_client.get(url(DATA, range="hour")).json()

    assert data["range"] == {"key": "hour", "label": "last hour", "granularity": "minute"}
    assert data["checks"] == page.context["platform_checks"] == 10
    assert data["totals"] == page.context["totals"]
    assert [(row["name"], row["denied"]) for row in data["operations"]] == [("PutRecords", 2)]
    assert data["top_throttled"][0]["customer"] == "acct-1"
    assert [(row["name"], row["checks"]) for row in data["services"]] == [("(no service)", 10)]
    assert data["html"].lstrip().startswith('<h2 id="platform">Whole platform: 10 checks')
    assert page.context["data_url"] == url(DATA, range="hour")


def test_the_refresh_interval_can_be_asked_for_within_bounds(admin_client) -> None:
    assert admin_client.get(url()).context["refresh_s"] == 30
    assert admin_client.get(url(refresh_s="5")).context["refresh_s"] == 5
    assert admin_client.get(url(refresh_s="0")).context["refresh_s"] == 2


def test_staff_who_may_not_see_customers_are_refused_the_page_and_its_json(db) -> None:
    user = User.objects.create_user("clerk", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_limit"))
    client = Client()
    client.force_login(user)

    page = client.get(url())
    data = client.get(url(DATA))

    assert page.status_code == 403
    assert "Can view customer" in page.content.decode()
    assert data.status_code == 403
    assert "Can view customer" in data.json()["error"]


def test_an_analyst_who_may_view_customers_sees_it(viewer_client) -> None:
    assert viewer_client.get(url()).status_code == 200


def test_a_silent_platform_says_so(admin_client) -> None:
    page = admin_client.get(url()).content.decode()

    assert "Whole platform: 0 checks in the last hour" in page
    assert "No customer was refused by a limit in the last hour." in page
    assert "No checks in the last hour." in page


@pytest.mark.parametrize(
    ("peak", "step", "unit"),
    [(60, "minute", "second"), (59, "minute", "minute"), (0, "minute", "minute"), (3600, "hour", "second"),
     (60, "hour", "minute"), (59, "hour", "hour"), (24, "day", "hour"), (23, "day", "day")],
)  # fmt: skip
def test_the_rate_unit_is_the_smallest_in_which_the_peak_reaches_one(peak, step, unit) -> None:
    assert rate_unit(peak, STEPS[step])[0] == unit


# hypothesis wants naive bounds and adds the zone itself
moments = st.datetimes(
    min_value=dt.datetime(2020, 1, 1),  # noqa: DTZ001
    max_value=dt.datetime(2030, 1, 1),  # noqa: DTZ001
    timezones=st.just(dt.UTC),
)


@given(start=moments, length=st.timedeltas(min_value=dt.timedelta(seconds=1), max_value=dt.timedelta(days=1000)))
def test_a_custom_window_covers_the_range_in_whole_buckets(start, length) -> None:
    window = custom_window(start, start + length)

    assert window.start <= start
    assert window.end >= start + length
    assert window.start + window.step > start, "widened by less than a bucket"
    assert window.end - window.step < start + length
    assert (window.start - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) % window.step == dt.timedelta(0)
    expected = "minute" if length <= dt.timedelta(hours=6) else "hour" if length <= dt.timedelta(days=14) else "day"
    assert window.granularity == expected


def test_a_custom_window_refuses_an_empty_range() -> None:
    moment = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    with pytest.raises(RangeInvalid):
        custom_window(moment, moment)
