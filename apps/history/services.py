"""Writing the one change history. Model saves and deletes are recorded by apps.history.recorder;
events that are not a save (unblocking a customer, ...) by `history_record_event`."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ObjectDoesNotExist
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from apps.history.context import actor_current, via_current
from apps.history.models import ChangeAction, ChangeEvent

ACTOR_MAX = ChangeEvent._meta.get_field("actor").max_length or 150
REPR_MAX = ChangeEvent._meta.get_field("object_repr").max_length or 300


class _Encoder(DjangoJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, dt.datetime):
            # In UTC, as the database gives it back, and to the microsecond (Django's encoder cuts to milliseconds).
            return (o.astimezone(dt.UTC) if o.tzinfo else o).isoformat()
        try:
            return super().default(o)
        except TypeError:
            return str(o)  # a model instance or anything else without a JSON form: its readable name


def jsonable(value: Any) -> Any:
    """`value` as it reads back from a JSON column: dates as ISO strings, tuples as lists, objects as text."""
    return json.loads(json.dumps(value, cls=_Encoder))


def history_record_event(*, actor: str, action: str, target: str, details: dict[str, object] | None = None) -> None:
    """Record an event that is not a model save (e.g. action="unblock", target="customer acct-1, limit x").

    `actor` is who did it (a user name, or "" for whoever is current: the logged-in user, job or command).
    A `details["customer"]` string files the event under that customer, for the history's customer filter.
    The row is part of the current transaction: if the caller's transaction rolls back, so does the event.
    """
    if not action.strip() or not target.strip():
        raise ValueError("A history event needs an action and a target, e.g. action='unblock', target='acct-1'.")
    current = actor_current()
    name = actor.strip() or current.name
    user = current.user if current.user is not None and current.user.get_username() == name else None
    data = jsonable(details or {})
    customer = data.get("customer")
    ChangeEvent.objects.create(
        actor=name[:ACTOR_MAX],
        user=user,
        via=via_current(),
        action=action.strip(),
        object_repr=target.strip()[:REPR_MAX],
        customer=customer if isinstance(customer, str) else "",
        details=data,
    )


def history_change_record(
    *, instance: models.Model, action: str, changes: dict[str, dict[str, Any]], customer: str
) -> ChangeEvent:
    actor = actor_current()
    return ChangeEvent.objects.create(
        actor=actor.name[:ACTOR_MAX],
        user=actor.user,
        via=via_current(),
        action=action,
        content_type=ContentType.objects.get_for_model(instance, for_concrete_model=True),
        object_id=str(instance.pk),
        object_repr=_readable(instance)[:REPR_MAX],
        customer=customer,
        changes=jsonable(changes),
    )


def _readable(instance: models.Model) -> str:
    try:
        return str(instance)
    except ObjectDoesNotExist:  # its __str__ follows a relation already deleted in this cascade
        return f"{instance._meta.verbose_name} #{instance.pk}"


def history_change_merge(*, event_id: int, field: str, before: Any, after: Any) -> bool:
    """Fold a later change of `field` into an event already written in this transaction (a many-to-many
    set after its object's save), keeping the earliest before; drop the event if nothing is left changed.
    Returns False when that event is gone (rolled back with a savepoint): then record a new one."""
    event = ChangeEvent.objects.filter(pk=event_id).first()
    if event is None:
        return False
    if event.action == ChangeAction.CREATED:
        event.changes[field] = jsonable({"before": None, "after": after})
    else:
        first_before = event.changes[field]["before"] if field in event.changes else before
        if jsonable(first_before) == jsonable(after):
            event.changes.pop(field, None)
        else:
            event.changes[field] = jsonable({"before": first_before, "after": after})
    if event.changes:
        event.save(update_fields=["changes"])
    else:
        event.delete()
    return True
