from typing import Any

from django.db import models
from django.test import Client

from apps.history.models import ChangeEvent
from apps.history.selectors import history_for_object
from tests.admin_fixtures import inline_management_data


def events_of(obj: models.Model) -> list[ChangeEvent]:
    """The object's events, oldest first (the order the test made them)."""
    return list(reversed(history_for_object(obj=obj)))


def last_event(obj: models.Model) -> ChangeEvent:
    return history_for_object(obj=obj).first()  # type: ignore[return-value]


def before_after(event: ChangeEvent) -> dict[str, tuple[Any, Any]]:
    return {field: (change["before"], change["after"]) for field, change in event.changes.items()}


def change_form_data(client: Client, url: str, **changes: Any) -> dict[str, Any]:
    """What the change form would post back untouched, with `changes` applied."""
    form = client.get(url).context["adminform"].form
    data = {name: form[name].value() for name in form.fields}  # value() is what the widget shows
    data = {name: "" if value is None else value for name, value in data.items()}
    return {**data, **inline_management_data(client, url), **changes}
