"""Quick actions from a customer's usage page: ×N for a while, allow / deny, unblock; each confirmed first."""

import datetime as dt

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from django.utils import timezone

from apps.customers.models import Customer
from apps.history.models import ChangeEvent
from apps.limits.models import AccessRule, Override, RuleAction
from apps.limits.snapshot_holder import snapshot_holder_reset
from tests.customers.factories import CustomerFactory, PlanFactory
from tests.limits.factories import LimitFactory, OperationFactory, OverrideFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def customer(engine) -> Customer:
    return CustomerFactory(external_id="acct-1")


@pytest.fixture
def limit(db):
    return LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=2)


def url(name: str, *args) -> str:
    return reverse(f"admin:customers_customer_{name}", args=args)


def check(api, **fields):
    body = {"customer": "acct-1", "operation": "ListStreams", **fields}
    return api.post("/api/v1/check", body, format="json")


def test_the_boost_page_says_what_is_in_force_and_what_it_becomes(admin_client, customer, limit) -> None:
    response = admin_client.get(url("boost", customer.pk, limit.pk))

    assert response.status_code == 200
    page = response.content.decode()
    assert "2 requests per minute per customer" in page
    assert '<option value="2" selected>×2</option>' in page
    assert '<option value="24" selected>24 hours</option>' in page
    assert not Override.objects.exists()


def test_confirming_doubles_the_limit_for_24_hours_and_checks_obey_it(admin_client, api, customer, limit) -> None:
    before = timezone.now()

    response = admin_client.post(url("boost", customer.pk, limit.pk), {"factor": "2", "hours": "24"})

    assert response.status_code == 302
    assert response["Location"] == url("usage", customer.pk)
    override = Override.objects.get()
    assert (override.customer, override.limit, override.quantity) == (customer, limit, 4)
    assert override.ends - override.starts == dt.timedelta(hours=24)
    assert override.starts >= before
    assert "admin" in override.reason
    assert LogEntry.objects.filter(object_id=str(override.pk)).exists()
    snapshot_holder_reset()  # the test's transaction never commits, so the version bump never comes
    assert [check(api).status_code for _ in range(5)] == [200, 200, 200, 200, 429]


def test_a_boost_multiplies_what_an_existing_override_grants(admin_client, customer, limit) -> None:
    OverrideFactory(customer=customer, limit=limit, quantity=100, reason="VIP")

    admin_client.post(url("boost", customer.pk, limit.pk), {"factor": "5", "hours": "1"})

    boost = Override.objects.exclude(reason="VIP").get()
    assert (boost.quantity, boost.ends - boost.starts) == (500, dt.timedelta(hours=1))


def test_a_factor_the_page_does_not_offer_is_refused_with_a_sentence(admin_client, customer, limit) -> None:
    response = admin_client.post(url("boost", customer.pk, limit.pk), {"factor": "1000", "hours": "24"})

    assert response.status_code == 400
    assert "Choose a factor of 2, 5, 10" in response.content.decode()
    assert not Override.objects.exists()


def test_a_limit_of_another_plan_cannot_be_boosted_for_this_customer(admin_client, customer) -> None:
    other = LimitFactory(plan=PlanFactory(name="pro"))

    response = admin_client.post(url("boost", customer.pk, other.pk), {"factor": "2", "hours": "24"})

    assert response.status_code == 400
    assert f"The limit {other.name} does not apply to acct-1." in response.content.decode()


def test_an_unknown_limit_is_a_404_with_a_sentence(admin_client, customer) -> None:
    response = admin_client.get(url("boost", customer.pk, 987654))
    assert response.status_code == 404
    assert "There is no limit with id 987654." in response.content.decode()


@pytest.mark.parametrize("action", [RuleAction.DENY, RuleAction.ALLOW])
def test_an_access_rule_takes_two_clicks_and_applies_to_checks(admin_client, api, customer, limit, action) -> None:
    assert "selected>24 hours" in admin_client.get(url("rule", customer.pk, action)).content.decode()

    response = admin_client.post(url("rule", customer.pk, action), {"hours": "1", "operation": ""})

    assert response.status_code == 302
    rule = AccessRule.objects.get()
    assert (rule.action, rule.customer, rule.operation) == (action, customer, None)
    assert dt.timedelta(minutes=59) < rule.expires - timezone.now() <= dt.timedelta(hours=1)
    snapshot_holder_reset()  # the test's transaction never commits, so the version bump never comes
    statuses = [check(api).status_code for _ in range(3)]
    assert statuses == ([403, 403, 403] if action == RuleAction.DENY else [200, 200, 200])


def test_a_rule_until_removed_has_no_expiry_and_can_name_one_operation(admin_client, customer, limit) -> None:
    admin_client.post(url("rule", customer.pk, "deny"), {"hours": "forever", "operation": "ListStreams"})
    rule = AccessRule.objects.get()
    assert (rule.expires, rule.operation.name) == (None, "ListStreams")


def test_an_unknown_rule_or_operation_is_refused_in_words(admin_client, customer) -> None:
    assert admin_client.get(url("rule", customer.pk, "block")).status_code == 404
    response = admin_client.post(url("rule", customer.pk, "deny"), {"hours": "1", "operation": "Nope"})
    assert response.status_code == 400
    assert "There is no operation called Nope." in response.content.decode()
    assert not AccessRule.objects.exists()


def test_unblocking_asks_first_then_resets_the_counters_and_records_it(admin_client, api, customer, limit) -> None:
    assert [check(api).status_code for _ in range(3)] == [200, 200, 429]
    confirm = admin_client.get(url("unblock", customer.pk, limit.pk))
    assert "Yes, reset streams" in confirm.content.decode()
    assert check(api).status_code == 429, "looking at the confirmation changes nothing"

    response = admin_client.post(url("unblock", customer.pk, limit.pk), follow=True)

    assert "Reset streams for acct-1: 1 counter(s)" in response.content.decode()
    assert check(api).status_code == 200
    event = ChangeEvent.objects.get(action="unblock")
    assert (event.actor, event.customer) == ("admin", "acct-1")


def test_a_shared_limit_cannot_be_unblocked_for_one_customer(admin_client, customer) -> None:
    per_ip = LimitFactory(name="per-ip", key_by=["ip"])
    response = admin_client.post(url("unblock", customer.pk, per_ip.pk))
    assert response.status_code == 400
    assert "would reset it for everyone who shares the counter" in response.content.decode()


@pytest.mark.parametrize(
    ("name", "args", "permission"),
    [
        ("boost", ("limit",), "Can add override"),
        ("unblock", ("limit",), "Can add override"),
        ("rule", ("deny",), "Can add access rule"),
        ("rule", ("allow",), "Can add access rule"),
    ],
)
def test_someone_who_may_only_look_is_refused_with_the_permission_named(
    viewer_client, api, customer, limit, name, args, permission
) -> None:
    check(api)
    target = url(name, customer.pk, *(limit.pk if arg == "limit" else arg for arg in args))

    for response in (viewer_client.get(target), viewer_client.post(target, {"factor": "2", "hours": "24"})):
        assert response.status_code == 403
        assert f"that needs the “{permission}” permission" in response.content.decode()
    assert not Override.objects.exists()
    assert not AccessRule.objects.exists()
    assert not ChangeEvent.objects.filter(action="unblock").exists()


def test_the_usage_page_offers_actions_only_to_those_who_may_use_them(
    admin_client, viewer_client, customer, limit
) -> None:
    boost = url("boost", customer.pk, limit.pk)
    assert boost in admin_client.get(url("usage", customer.pk)).content.decode()
    assert boost not in viewer_client.get(url("usage", customer.pk)).content.decode()
