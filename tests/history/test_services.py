"""Changes made through the services (apps.limits.services, apps.apikeys.services), and what a row holds."""

import datetime as dt

import pytest
from django.db import transaction
from django.utils import timezone

from apps.apikeys.models import Service
from apps.apikeys.services import api_key_create, api_key_revoke
from apps.history.context import history_actor
from apps.history.models import ChangeEvent
from apps.limits.models import Limit, Override
from apps.limits.services import config_object_delete, config_object_save
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.history.helpers import before_after, events_of, last_event
from tests.limits.factories import LimitFactory, OperationFactory, OverrideFactory

pytestmark = pytest.mark.django_db


def _limit_values(**changes: object) -> dict[str, object]:
    return {
        "name": "daily",
        "operation": OperationFactory(name="ModifyShardCount"),
        "algorithm": "calendar",
        "calendar_period": "day",
        "quantity": 10,
        "key_by": ["customer", "resource"],
        **changes,
    }


def test_a_created_object_is_recorded_with_every_value_and_related_objects_by_name() -> None:
    before = timezone.now()
    with history_actor("nightly sync (script)"):
        limit = config_object_save(instance=Limit(), values=_limit_values())

    event = last_event(limit)
    assert (event.actor, event.action, event.object_repr) == ("nightly sync (script)", "created", "daily")
    assert before <= event.at <= timezone.now()
    changes = before_after(event)
    assert changes["operation"] == (None, "ModifyShardCount")
    assert changes["quantity"] == (None, 10)
    assert changes["key_by"] == (None, ["customer", "resource"])
    assert "created_at" not in changes
    assert "updated_at" not in changes


def test_an_update_records_only_the_fields_that_changed_before_and_after() -> None:
    limit = config_object_save(instance=Limit(), values=_limit_values())
    other = OperationFactory(name="PutRecords")

    with history_actor("alice"):
        config_object_save(instance=limit, values={"quantity": 20, "operation": other, "match": {"a": "b"}})

    event = last_event(limit)
    assert event.action == "changed"
    assert before_after(event) == {
        "operation": ("ModifyShardCount", "PutRecords"),
        "quantity": (10, 20),
        "match": ({}, {"a": "b"}),
    }


def test_a_save_that_changes_nothing_records_nothing() -> None:
    limit = config_object_save(instance=Limit(), values=_limit_values())

    config_object_save(instance=Limit.objects.get(pk=limit.pk), values={"quantity": 10})

    assert [event.action for event in events_of(limit)] == ["created"]


def test_before_values_come_from_the_database_not_from_a_stale_instance() -> None:
    limit = config_object_save(instance=Limit(), values=_limit_values())
    stale = Limit.objects.get(pk=limit.pk)
    Limit.objects.filter(pk=limit.pk).update(quantity=15)  # changed by someone else meanwhile

    config_object_save(instance=stale, values={"quantity": 20})

    assert before_after(last_event(limit))["quantity"] == (15, 20)


def test_a_delete_records_every_value_before_and_cascaded_deletes_under_their_customer() -> None:
    customer = CustomerFactory(external_id="acct-1")
    override = OverrideFactory(customer=customer, quantity=100)
    override_pk = override.pk

    with history_actor("bob"):
        config_object_delete(instance=customer)

    deleted = ChangeEvent.objects.filter(action="deleted").order_by("id")
    assert [(event.content_type.model, event.customer) for event in deleted] == [
        ("override", "acct-1"),
        ("customer", "acct-1"),
    ]
    override_event = deleted[0]
    assert override_event.object_id == str(override_pk)
    assert before_after(override_event)["quantity"] == (100, None)
    assert before_after(override_event)["customer"][0].startswith("acct-1")
    assert {event.actor for event in deleted} == {"bob"}


def test_a_change_of_a_services_operations_reads_as_one_change_with_the_whole_list_before_and_after() -> None:
    read, write, admin = OperationFactory(name="Read"), OperationFactory(name="Write"), OperationFactory(name="Admin")
    service = config_object_save(instance=Service(), values={"name": "control-plane"}, many={"operations": [read]})
    assert before_after(last_event(service))["operations"] == (None, ["Read"])

    with transaction.atomic():
        config_object_save(
            instance=Service.objects.get(pk=service.pk),
            values={"description": "the console"},
            many={"operations": [write, admin]},
        )

    event = last_event(service)
    assert event.action == "changed"
    assert before_after(event) == {
        "description": ("", "the console"),
        "operations": (["Read"], ["Admin", "Write"]),
    }


def test_an_operations_change_alone_is_recorded_and_a_set_to_the_same_list_is_not() -> None:
    read, write = OperationFactory(name="Read"), OperationFactory(name="Write")
    service = Service.objects.get(pk=ServiceFactory(name="billing").pk)

    service.operations.set([read, write])
    service.operations.set([write, read])

    events = events_of(service)
    assert [event.action for event in events] == ["created", "changed"]
    assert before_after(events[1]) == {"operations": ([], ["Read", "Write"])}


def test_adding_a_service_from_the_operation_side_is_recorded_on_the_service() -> None:
    service = ServiceFactory(name="billing")
    operation = OperationFactory(name="Read")

    operation.services.add(service)

    assert before_after(last_event(service)) == {"operations": ([], ["Read"])}


def test_an_api_key_is_recorded_by_prefix_and_never_with_its_hash_or_secret() -> None:
    customer = CustomerFactory(external_id="acct-7")
    service = ServiceFactory(name="control-plane")

    issued = api_key_create(service=service, customer=customer, name="ci")

    event = last_event(issued.api_key)
    assert (event.action, event.via, event.customer) == ("created", "api key create", "acct-7")
    assert before_after(event)["prefix"] == (None, issued.api_key.prefix)
    stored = str(ChangeEvent.objects.filter(pk=event.pk).values().get())
    assert issued.api_key.key_hash not in stored
    assert issued.secret.split(".", 1)[1] not in stored
    assert "key_hash" not in event.changes


def test_revoking_an_api_key_records_when() -> None:
    issued = api_key_create(service=ServiceFactory(), name="old")

    with history_actor("carol"):
        api_key_revoke(api_key=issued.api_key)

    event = last_event(issued.api_key)
    assert (event.actor, event.action, event.via) == ("carol", "changed", "api key revoke")
    before, after = before_after(event)["revoked_at"]
    assert before is None
    assert dt.datetime.fromisoformat(after) == issued.api_key.revoked_at


def _save_then_abort(limit: Limit) -> None:
    with transaction.atomic():
        config_object_save(instance=limit, values={"quantity": 99})
        raise RuntimeError("abort")


def test_a_change_rolled_back_leaves_no_history() -> None:
    limit = LimitFactory(quantity=10)

    with pytest.raises(RuntimeError, match="abort"):
        _save_then_abort(limit)

    assert [event.action for event in events_of(limit)] == ["created"]


def test_an_override_of_a_customer_is_filed_under_that_customer() -> None:
    customer = CustomerFactory(external_id="acct-9")
    limit = LimitFactory()

    override = config_object_save(instance=Override(), values={"customer": customer, "limit": limit, "quantity": 5})

    assert last_event(override).customer == "acct-9"


def test_nobody_named_means_system() -> None:
    limit = LimitFactory()

    assert last_event(limit).actor == "system"


def test_a_time_given_in_another_zone_is_not_a_change_of_the_same_instant() -> None:
    starts = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    override = OverrideFactory(starts=starts, quantity=5)
    paris = dt.timezone(dt.timedelta(hours=1))

    config_object_save(instance=override, values={"starts": starts.astimezone(paris), "quantity": 6})

    assert before_after(last_event(override)) == {"quantity": (5, 6)}
