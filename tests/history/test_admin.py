"""The admin as a door (saves and deletes by the logged-in user), the one history page, and per-object history."""

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.history.context import history_actor
from apps.history.display import change_lines
from apps.history.models import ChangeEvent
from apps.history.services import history_record_event
from apps.limits.models import Limit
from apps.limits.services import config_object_save
from tests.admin_fixtures import admin_url
from tests.customers.factories import CustomerFactory
from tests.history.factories import ChangeEventFactory
from tests.history.helpers import before_after, change_form_data, last_event
from tests.limits.factories import LimitFactory, OperationFactory, OverrideFactory

pytestmark = pytest.mark.django_db

HISTORY_URL = "/admin/history/changeevent/"


@pytest.fixture
def alice(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_superuser("alice", "alice@example.com", "pw")


@pytest.fixture
def alice_client(alice) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(alice)
    return client


def test_an_admin_save_is_recorded_as_done_by_the_logged_in_user_through_the_admin(alice, alice_client) -> None:
    limit = LimitFactory(name="daily", quantity=10)
    url = admin_url(Limit, "change", limit.pk)

    data = change_form_data(alice_client, url, quantity=20)
    before = timezone.now()

    response = alice_client.post(url, data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    event = last_event(limit)
    assert before <= event.at <= timezone.now()
    assert (event.actor, event.user, event.via, event.action) == ("alice", alice, "admin", "changed")
    assert before_after(event) == {"quantity": (10, 20)}


def test_an_admin_add_and_delete_are_recorded(alice_client) -> None:
    operation = OperationFactory(name="PutRecords")
    data = change_form_data(alice_client, admin_url(Limit, "add"))
    data |= {"name": "per-second", "operation": operation.pk, "algorithm": "fixed_window", "quantity": 5}
    data |= {"period_seconds": 1, "key_by": '["customer"]', "match": "{}"}
    assert alice_client.post(admin_url(Limit, "add"), data).status_code == 302
    limit = Limit.objects.get(name="per-second")

    assert alice_client.post(admin_url(Limit, "delete", limit.pk), {"post": "yes"}).status_code == 302

    events = ChangeEvent.objects.filter(object_id=str(limit.pk), content_type__model="limit").order_by("id")
    assert [(event.action, event.actor, event.via) for event in events] == [
        ("created", "alice", "admin"),
        ("deleted", "alice", "admin"),
    ]
    assert before_after(events[1])["operation"] == ("PutRecords", None)


def _history(client: Client, **query: str) -> list[ChangeEvent]:
    response = client.get(HISTORY_URL, query)
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


def test_the_history_page_lists_every_change_newest_first_with_before_and_after(alice_client) -> None:
    limit = LimitFactory(name="daily", quantity=10)
    with history_actor("import_limits (command)"):
        config_object_save(instance=limit, values={"quantity": 20})
    history_record_event(actor="bob", action="unblock", target="customer acct-1, limit daily", details={"n": 3})

    events = _history(alice_client)

    assert [(event.action, event.object_repr) for event in events] == [
        ("unblock", "customer acct-1, limit daily"),
        ("changed", "daily"),
        ("created", "daily"),
        ("created", limit.operation.name),
    ]
    page = alice_client.get(HISTORY_URL).content.decode()
    assert "<b>quantity</b>: 10 → 20" in page
    assert "import_limits (command)" in page
    assert "<b>n</b>: 3" in page


def test_the_history_page_filters_by_model_customer_and_actor(alice_client) -> None:
    with history_actor("alice"):
        limit = LimitFactory(name="daily")
        customer = CustomerFactory(external_id="acct-1")
        override = OverrideFactory(customer=customer, limit=limit)
    with history_actor("bob"):
        OverrideFactory(customer=CustomerFactory(external_id="acct-2"), limit=limit)

    assert {event.content_type.model for event in _history(alice_client, model="limits.limit")} == {"limit"}
    assert {event.object_repr for event in _history(alice_client, customer="acct-1")} == {str(customer), str(override)}
    assert {event.actor for event in _history(alice_client, actor="bob")} == {"bob"}
    assert [event.action for event in _history(alice_client, model="event")] == []


def test_the_text_filters_keep_the_other_filters_of_the_page(alice_client) -> None:
    page = alice_client.get(HISTORY_URL, {"model": "limits.limit", "customer": "acct-1"}).content.decode()

    assert '<input type="hidden" name="model" value="limits.limit">' in page
    assert 'name="customer" value="acct-1"' in page


def test_the_history_cannot_be_added_to_changed_or_deleted_even_by_a_superuser(alice_client) -> None:
    event = ChangeEvent.objects.create(actor="x", action="unblock", object_repr="acct-1")

    assert alice_client.get(f"{HISTORY_URL}add/").status_code == 403
    change_page = alice_client.get(f"{HISTORY_URL}{event.pk}/change/")
    assert change_page.status_code == 200
    assert 'name="_save"' not in change_page.content.decode()
    assert alice_client.post(f"{HISTORY_URL}{event.pk}/change/", {"actor": "forged"}).status_code == 403
    assert alice_client.post(f"{HISTORY_URL}{event.pk}/delete/", {"post": "yes"}).status_code == 403
    event.refresh_from_db()
    assert event.actor == "x"


# --- per-object history (HistoryAdminMixin), on a test site until the real admins use the mixin ---------


@pytest.mark.urls("tests.history.urls")
def test_an_objects_history_page_shows_its_changes_from_every_door(alice_client) -> None:
    limit = LimitFactory(name="daily", quantity=10)
    with history_actor("import_limits (command)"):
        config_object_save(instance=limit, values={"quantity": 20})
    LimitFactory(name="other")

    response = alice_client.get(f"/mixin-admin/limits/limit/{limit.pk}/history/")

    assert response.status_code == 200
    assert [event.action for event, _ in response.context["events"]] == ["changed", "created"]
    page = response.content.decode()
    assert "<b>quantity</b>: 10 → 20" in page
    assert "import_limits (command)" in page
    assert "other" not in [event.object_repr for event, _ in response.context["events"]]


@pytest.mark.urls("tests.history.urls")
def test_a_customers_history_page_includes_its_overrides(alice_client) -> None:
    customer = CustomerFactory(external_id="acct-1")
    override = OverrideFactory(customer=customer, quantity=5)

    response = alice_client.get(f"/mixin-admin/customers/customer/{customer.pk}/history/")

    assert {event.object_repr for event, _ in response.context["events"]} == {str(customer), str(override)}


@pytest.mark.urls("tests.history.urls")
def test_an_objects_history_needs_permission_to_view_the_object(django_user_model) -> None:
    limit = LimitFactory()
    user = django_user_model.objects.create_user("eve", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_customer"))
    client = Client()
    client.force_login(user)

    assert client.get(f"/mixin-admin/limits/limit/{limit.pk}/history/").status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="view_limit"))
    assert client.get(f"/mixin-admin/limits/limit/{limit.pk}/history/").status_code == 200


@pytest.mark.urls("tests.history.urls")
def test_an_object_without_history_says_so(alice_client) -> None:
    limit = LimitFactory()
    ChangeEvent.objects.all().delete()

    page = alice_client.get(f"/mixin-admin/limits/limit/{limit.pk}/history/").content.decode()

    assert "No change of this object has been recorded yet" in page


def test_the_history_page_costs_the_same_queries_for_many_rows_as_for_one(alice_client) -> None:
    LimitFactory()
    ChangeEventFactory()
    alice_client.get(HISTORY_URL)  # warm the content type cache
    with CaptureQueriesContext(connection) as few_rows:
        alice_client.get(HISTORY_URL)
    for _ in range(10):
        OverrideFactory()
        ChangeEventFactory()

    with CaptureQueriesContext(connection) as many_rows:
        response = alice_client.get(HISTORY_URL)

    assert len(response.context["cl"].result_list) > 40
    assert len(many_rows) == len(few_rows), [entry["sql"] for entry in many_rows.captured_queries]


def test_a_change_opens_read_only_with_its_fields_before_and_after(alice_client) -> None:
    limit = LimitFactory(quantity=10)
    config_object_save(instance=limit, values={"quantity": 20})

    page = alice_client.get(f"{HISTORY_URL}{last_event(limit).pk}/change/").content.decode()

    assert "<tr><th>quantity</th><td>10 → 20</td></tr>" in page


def test_the_history_page_filters_by_action(alice_client) -> None:
    limit = LimitFactory(quantity=10)
    config_object_save(instance=limit, values={"quantity": 20})

    assert [event.object_repr for event in _history(alice_client, action="changed")] == [limit.name]


def test_a_change_reads_in_the_models_field_order_with_the_forms_labels() -> None:
    limit = LimitFactory(name="daily", quantity=10, period_seconds=60)

    labels = [label for label, _ in change_lines(last_event(limit))]

    assert labels == [
        "name",
        "operation",
        "algorithm",
        "quantity",
        "period seconds",
        "unit",
        "key by",
        "mode",
        "on store failure",
        "audit",
    ]
