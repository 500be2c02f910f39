"""history_record_event: events that are not a model save (e.g. an operator unblocking a customer)."""

import datetime as dt

import pytest
from django.db import transaction
from django.test import RequestFactory
from django.utils import timezone

from apps.history.context import history_request, history_via
from apps.history.models import ChangeEvent
from apps.history.selectors import history_list
from apps.history.services import history_record_event

pytestmark = pytest.mark.django_db


def test_an_event_records_who_what_target_and_details_filed_under_its_customer() -> None:
    before = timezone.now()
    with history_via("customer unblock"):
        history_record_event(
            actor="alice",
            action="unblock",
            target="customer acct-1, limit daily",
            details={
                "customer": "acct-1",
                "limit": "daily",
                "counters_reset": 2,
                "at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            },
        )

    event = history_list(customer="acct-1").get()
    assert (event.actor, event.action, event.object_repr, event.via) == (
        "alice",
        "unblock",
        "customer acct-1, limit daily",
        "customer unblock",
    )
    assert event.content_type is None
    assert event.details == {
        "customer": "acct-1",
        "limit": "daily",
        "counters_reset": 2,
        "at": "2026-01-01T00:00:00+00:00",
    }
    assert before <= event.at <= timezone.now()


def test_an_event_by_the_logged_in_user_links_that_user(django_user_model) -> None:
    user = django_user_model.objects.create_user("alice")
    request = RequestFactory().post("/admin/customers/customer/1/unblock/")
    request.user = user

    with history_request(request):
        history_record_event(actor="alice", action="unblock", target="acct-1")
        history_record_event(actor="", action="unblock", target="acct-2")
        history_record_event(actor="support bot", action="unblock", target="acct-3")

    events = ChangeEvent.objects.order_by("id")
    assert [(event.actor, event.user) for event in events] == [("alice", user), ("alice", user), ("support bot", None)]


def test_an_event_without_a_customer_detail_has_no_customer() -> None:
    history_record_event(actor="bob", action="flush", target="usage", details={"customer": 42})

    assert ChangeEvent.objects.get().customer == ""


def _unblock_that_fails() -> None:
    with transaction.atomic():
        history_record_event(actor="alice", action="unblock", target="acct-1")
        raise RuntimeError("the reset failed")


def test_an_event_rolls_back_with_the_change_it_describes() -> None:
    with pytest.raises(RuntimeError, match="the reset failed"):
        _unblock_that_fails()

    assert not ChangeEvent.objects.exists()


@pytest.mark.parametrize(("action", "target"), [("", "acct-1"), ("unblock", "  ")])
def test_an_event_without_an_action_or_target_is_refused_in_words(action: str, target: str) -> None:
    with pytest.raises(ValueError, match="needs an action and a target"):
        history_record_event(actor="alice", action=action, target=target)
