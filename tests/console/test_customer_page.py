"""A customer's usage page: charts per operation from the usage tables, live limits from Redis, the score."""

import datetime as dt

import pytest
import redis
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import timezone

from apps.customers.models import Customer
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.engine.store.redis import RedisStore
from apps.usage.models import UsageDay, UsageHour, UsageMinute
from tests.admin_fixtures import admin_url
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import free_port

pytestmark = pytest.mark.django_db

NONE = dict.fromkeys(("allowed", "denied", "shadow_denied", "degraded", "rule_denied", "unavailable", "session_ms"), 0)


def usage_url(customer: Customer, **query: str) -> str:
    url = reverse("admin:customers_customer_usage", args=[customer.pk])
    return url + ("?" + "&".join(f"{key}={value}" for key, value in query.items()) if query else "")


@pytest.fixture
def customer(engine) -> Customer:
    return CustomerFactory(external_id="acct-1")


def minutes_ago(minutes: int) -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=minutes)


def test_each_operation_gets_a_chart_and_a_table_of_the_last_hour(admin_client, customer) -> None:
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minutes_ago(5), allowed=7, denied=2)
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minutes_ago(3), allowed=4,
                               shadow_denied=1)  # fmt: skip
    UsageMinute.objects.create(customer="acct-1", operation="ListStreams", bucket=minutes_ago(1), allowed=1)
    UsageMinute.objects.create(customer="acct-1", operation="Old", bucket=minutes_ago(90), allowed=1)
    UsageMinute.objects.create(customer="acct-2", operation="PutRecords", bucket=minutes_ago(1), allowed=99)

    response = admin_client.get(usage_url(customer))

    assert response.status_code == 200
    charts = {chart.operation: chart for chart in response.context["charts"]}
    assert list(charts) == ["ListStreams", "PutRecords"]
    assert charts["PutRecords"].totals == {**NONE, "allowed": 11, "denied": 2, "shadow_denied": 1}
    assert [row[1:] for row in charts["PutRecords"].rows] == [(7, 2, 0, 0, 0, 0, "0"), (4, 0, 1, 0, 0, 0, "0")]
    page = response.content.decode()
    assert page.count('<svg class="usage-chart"') == 2
    assert 'data-series="allowed" data-total="11"' in page
    assert 'data-series="degraded"' not in page, "counters that are all zero are not drawn"
    assert 'data-series="session_ms"' not in page, "no session time chart where no lease was held"


def test_decisions_made_without_redis_or_by_a_rule_show_in_the_totals_table_and_chart(admin_client, customer) -> None:
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minutes_ago(4), allowed=3, denied=1,
                               degraded=4)  # fmt: skip
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minutes_ago(2), rule_denied=5,
                               unavailable=6)  # fmt: skip

    response = admin_client.get(usage_url(customer))

    (chart,) = response.context["charts"]
    assert chart.totals == {**NONE, "allowed": 3, "denied": 1, "degraded": 4, "rule_denied": 5, "unavailable": 6}
    assert [row[1:] for row in chart.rows] == [(3, 1, 0, 4, 0, 0, "0"), (0, 0, 0, 0, 5, 6, "0")]
    page = response.content.decode()
    assert "3 allowed, 1 denied, 0 shadow-denied, 4 degraded, 5 rule-denied, 6 unavailable" in page
    for header in ("Degraded", "Rule-denied", "Unavailable"):
        assert f'<th scope="col">{header}</th>' in page
    assert "<td>0</td><td>0</td><td>0</td><td>0</td><td>5</td><td>6</td><td>0</td>" in page
    for series, total in (("degraded", 4), ("rule_denied", 5), ("unavailable", 6)):
        assert f'data-series="{series}" data-total="{total}"' in page


@pytest.mark.parametrize(("range_key", "model", "step"), [("day", UsageHour, "hours"), ("30d", UsageDay, "days")])
def test_longer_ranges_read_the_rolled_up_tables(admin_client, customer, range_key, model, step) -> None:
    now = timezone.now()
    model.objects.create(customer="acct-1", operation="PutRecords", bucket=now - dt.timedelta(**{step: 2}), denied=5)
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minutes_ago(1), allowed=1000)

    response = admin_client.get(usage_url(customer, range=range_key))

    (chart,) = response.context["charts"]
    assert chart.totals == {**NONE, "denied": 5}


def test_an_unknown_range_is_explained_and_the_last_hour_shown(admin_client, customer) -> None:
    response = admin_client.get(usage_url(customer, range="year"))

    assert response.status_code == 200
    assert response.context["range"].key == "hour"
    assert "“year” is not a range this page offers" in response.content.decode()


def test_a_customer_without_usage_gets_a_sentence_not_empty_charts(admin_client, customer) -> None:
    page = admin_client.get(usage_url(customer)).content.decode()
    assert "acct-1 made no checks in the last hour." in page


def test_live_limits_show_what_is_used_with_the_score_and_its_formula(admin_client, api, customer) -> None:
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=4)
    for _ in range(3):
        api.post("/api/v1/check", {"customer": "acct-1", "operation": "ListStreams"}, format="json")

    response = admin_client.get(usage_url(customer))

    (row,) = response.context["limit_rows"]
    assert (row.state.used, row.state.remaining, row.percent) == (3, 1, 75)
    assert row.summary == "4 requests per minute per customer"
    page = response.content.decode()
    assert "3 of 4 (75%)" in page
    assert 'data-score="0.75"' in page
    assert "openings in the window ÷ openings limit" in page
    assert "3/4 = 0.75" in page


def test_leases_in_use_are_listed(admin_client, api, customer) -> None:
    LimitFactory(name="sessions", operation=OperationFactory(name="OpenSession"), algorithm="concurrency", quantity=5,
                 period_seconds=3600)  # fmt: skip
    api.post("/api/v1/leases", {"customer": "acct-1", "operation": "OpenSession", "ttl_s": 60}, format="json")

    response = admin_client.get(usage_url(customer))

    (lease,) = response.context["lease_rows"]
    assert (lease.state.used, lease.state.capacity) == (1, 5)
    assert "of 5 sessions held on OpenSession" in response.content.decode()


def test_when_redis_is_down_the_page_says_so_and_still_shows_the_charts(admin_client, customer) -> None:
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minutes_ago(1), allowed=3)
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"))
    dead = redis.Redis(port=free_port(), socket_connect_timeout=0.2, socket_timeout=0.2)
    engine_store_use(RedisStore(dead, key_prefix="dead"))

    response = admin_client.get(usage_url(customer))

    assert response.status_code == 200
    assert "Redis did not answer, so live counters cannot be shown" in response.content.decode()
    assert len(response.context["charts"]) == 1


def test_an_unknown_customer_is_a_404_with_a_sentence(admin_client, db) -> None:
    response = admin_client.get(reverse("admin:customers_customer_usage", args=[424242]))
    assert response.status_code == 404
    assert "There is no customer with id 424242" in response.content.decode()


def test_the_page_needs_permission_to_view_customers(client, customer) -> None:
    user = User.objects.create_user("nosy", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_limit"))
    client.force_login(user)

    response = client.get(usage_url(customer))

    assert response.status_code == 403
    assert "Can view customer" in response.content.decode()


def test_the_customer_list_and_page_link_to_the_usage_page(admin_client, customer) -> None:
    url = usage_url(customer)
    assert url in admin_client.get(admin_url(Customer, "changelist")).content.decode()
    assert url in admin_client.get(admin_url(Customer, "change", customer.pk)).content.decode()
