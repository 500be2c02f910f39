import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.usage import admin as usage_admin
from apps.usage.models import UsageDay, UsageHour, UsageMinute
from tests.admin_fixtures import admin_url
from tests.usage.factories import UsageMinuteFactory

USAGE_MODELS = [UsageMinute, UsageHour, UsageDay]


def _paginator(queryset):
    return usage_admin.CappedCountPaginator(queryset.order_by("-bucket", "pk"), per_page=100)


@pytest.mark.django_db
@pytest.mark.parametrize("model", USAGE_MODELS, ids=lambda model: model.__name__)
def test_usage_rows_can_be_viewed_but_not_added_changed_or_deleted(admin_client, model) -> None:
    row = model.objects.create(customer="acct-1", operation="PutRecords", bucket=dt.datetime(2025, 1, 1, tzinfo=dt.UTC))

    assert admin_client.get(admin_url(model, "change", row.pk)).status_code == 200
    assert admin_client.get(admin_url(model, "add")).status_code == 403
    assert admin_client.post(admin_url(model, "change", row.pk), {"allowed": 999}).status_code == 403
    assert admin_client.post(admin_url(model, "delete", row.pk), {"post": "yes"}).status_code == 403
    row.refresh_from_db()
    assert row.allowed == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query", [{}, {"q": "acct-1"}, {"bucket__gte": "2025-01-01 00:00:00+00:00"}], ids=["all", "search", "dated"]
)
def test_the_usage_list_never_counts_a_whole_table(admin_client, query) -> None:
    UsageMinuteFactory.create_batch(3, customer="acct-1")

    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(admin_url(UsageMinute, "changelist"), query)

    assert response.status_code == 200
    counts = [entry["sql"] for entry in captured.captured_queries if "COUNT(" in entry["sql"].upper()]
    assert counts, "the list should still count, only boundedly"
    assert all("LIMIT" in sql.upper() for sql in counts), counts


@pytest.mark.django_db
def test_the_usage_paginator_counts_exactly_below_the_cap() -> None:
    UsageMinuteFactory.create_batch(4)
    assert _paginator(UsageMinute.objects.all()).count == 4


@pytest.mark.django_db
def test_above_the_cap_a_filtered_usage_list_reports_the_cap(monkeypatch) -> None:
    monkeypatch.setattr(usage_admin, "COUNT_CAP", 3)
    UsageMinuteFactory.create_batch(5, customer="acct-1")
    assert _paginator(UsageMinute.objects.filter(customer="acct-1")).count == 3


@pytest.mark.django_db
def test_above_the_cap_an_unfiltered_usage_list_reports_the_planner_estimate(monkeypatch) -> None:
    monkeypatch.setattr(usage_admin, "COUNT_CAP", 3)
    UsageMinuteFactory.create_batch(7)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {UsageMinute._meta.db_table}")
    assert _paginator(UsageMinute.objects.all()).count == 7


@pytest.mark.django_db
def test_the_usage_search_matches_a_customer_or_operation_exactly(admin_client) -> None:
    wanted = UsageMinuteFactory(customer="acct-1", operation="PutRecords")
    UsageMinuteFactory(customer="acct-10", operation="PutRecords")
    UsageMinuteFactory(customer="acct-2", operation="PutRecordsBatch")

    def found(term: str) -> set[UsageMinute]:
        return set(admin_client.get(admin_url(UsageMinute, "changelist"), {"q": term}).context["cl"].result_list)

    assert found("acct-1") == {wanted}
    assert len(found("PutRecords")) == 2


@pytest.mark.django_db
def test_the_usage_list_shows_the_newest_bucket_first(admin_client) -> None:
    older = UsageMinuteFactory(bucket=dt.datetime(2025, 1, 1, 10, 0, tzinfo=dt.UTC))
    newer = UsageMinuteFactory(bucket=dt.datetime(2025, 1, 1, 10, 1, tzinfo=dt.UTC))
    result = admin_client.get(admin_url(UsageMinute, "changelist")).context["cl"].result_list
    assert list(result) == [newer, older]


@pytest.mark.django_db
@pytest.mark.parametrize("model", USAGE_MODELS, ids=lambda model: model.__name__)
def test_the_usage_list_shows_every_counter(admin_client, model) -> None:
    model.objects.create(
        customer="acct-1",
        operation="PutRecords",
        bucket=dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        allowed=11,
        denied=12,
        shadow_denied=13,
        degraded=14,
        rule_denied=15,
        unavailable=16,
    )

    page = admin_client.get(admin_url(model, "changelist")).content.decode()

    for column in ("allowed", "denied", "shadow_denied", "degraded", "rule_denied", "unavailable"):
        assert f"column-{column}" in page
    for value in range(11, 17):
        assert f">{value}</td>" in page
