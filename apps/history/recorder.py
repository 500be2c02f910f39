"""Recording every save and delete of a configuration model into the change history.

Signals rather than a call in each service, because the admin, import_limits, the services and the
jobs all write through Model.save() and Model.delete(): this is the one place that sees every door,
including doors added later (the config version bump in apps.limits.signals is the same kind of side
effect). Writes that send no signal are not seen: QuerySet.update() and bulk_create(). Configuration
code writes config rows one object at a time (apps.limits.services); the two bulk writes that remain
are bookkeeping, not configuration (API keys' last use, customers first seen in checks).

Before-values are read from the database just before a save (one SELECT per save of a config row;
those are rare), so a row says what really changed, not what a form believed.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.db import models, transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save

from apps.history.models import ChangeAction
from apps.history.registry import TRACKED, Tracked, tracked_for
from apps.history.services import history_change_merge, history_change_record, jsonable

BEFORE_ATTR = "_history_before"
EVENT_ATTR = "_history_event_id"
MANY_BEFORE_ATTR = "_history_many_before"


def connect() -> None:
    for tracked in TRACKED:
        model, uid = tracked.model, f"history-{tracked.label}"
        pre_save.connect(_remember_before, sender=model, dispatch_uid=f"{uid}-pre-save")
        post_save.connect(_record_save, sender=model, dispatch_uid=f"{uid}-save")
        post_delete.connect(_record_delete, sender=model, dispatch_uid=f"{uid}-delete")
        for name in tracked.many:
            receiver = functools.partial(_record_many, tracked=tracked, name=name)
            through = getattr(model, name).through
            m2m_changed.connect(receiver, sender=through, weak=False, dispatch_uid=f"{uid}-{name}")


def _remember_before(sender: type[models.Model], instance: models.Model, raw: bool = False, **kwargs: Any) -> None:
    if raw or instance._state.adding or instance.pk is None:
        return
    tracked = _tracked(sender)
    attnames = [field.attname for field in tracked.fields()]
    # None when no row has this pk yet (a save with a chosen pk): then the save creates it.
    instance.__dict__[BEFORE_ATTR] = sender._base_manager.filter(pk=instance.pk).values(*attnames).first()


def _record_save(
    sender: type[models.Model],
    instance: models.Model,
    created: bool,
    raw: bool = False,
    update_fields: frozenset[str] | None = None,
    **kwargs: Any,
) -> None:
    if raw:
        return
    tracked = _tracked(sender)
    before = instance.__dict__.pop(BEFORE_ATTR, None)
    if created or before is None:
        action = ChangeAction.CREATED
        changes = {field.name: {"before": None, "after": _shown(instance, field)} for field in tracked.fields()}
    else:
        action = ChangeAction.CHANGED
        changes = _changed_fields(tracked, instance, before, update_fields)
        if not changes:
            return  # saved without a change (or only timestamps): nothing anyone needs to read
    event = history_change_record(
        instance=instance, action=action, changes=changes, customer=tracked.customer_of(instance)
    )
    _remember_event(instance, event.pk)


def _changed_fields(
    tracked: Tracked, instance: models.Model, before: dict[str, Any], update_fields: frozenset[str] | None
) -> dict[str, dict[str, Any]]:
    changes = {}
    for field in tracked.fields():
        if update_fields is not None and field.name not in update_fields:
            continue  # not written by this save, whatever the instance holds in memory
        old, new = before[field.attname], getattr(instance, field.attname)
        if not _same(old, new):
            changes[field.name] = {"before": _shown_raw(field, old), "after": _shown(instance, field)}
    return changes


def _record_delete(sender: type[models.Model], instance: models.Model, **kwargs: Any) -> None:
    tracked = _tracked(sender)
    changes = {field.name: {"before": _shown(instance, field), "after": None} for field in tracked.fields()}
    history_change_record(
        instance=instance, action=ChangeAction.DELETED, changes=changes, customer=tracked.customer_of(instance)
    )


def _record_many(
    sender: type[models.Model],
    instance: models.Model,
    action: str,
    reverse: bool,
    model: type[models.Model],
    pk_set: set[Any] | None,
    *,
    tracked: Tracked,
    name: str,
    **kwargs: Any,
) -> None:
    """`service.operations.set(...)` removes then adds: the before is taken at the first pre_ signal and the
    change is folded into the object's event of this transaction, so one save reads as one change."""
    if action.startswith("pre_"):
        owners = [instance] if not reverse else _reverse_owners(tracked, name, instance, pk_set)
        stash = instance.__dict__.setdefault(MANY_BEFORE_ATTR, {})
        for owner in owners:
            stash.setdefault((name, owner.pk), (owner, _related_names(owner, name)))
        return
    stash = instance.__dict__.get(MANY_BEFORE_ATTR, {})
    for key in [key for key in stash if key[0] == name]:
        owner, before = stash.pop(key)
        after = _related_names(owner, name)
        if before != after:
            _record_many_change(tracked, owner, name, before, after)


def _reverse_owners(tracked: Tracked, name: str, target: models.Model, pk_set: set[Any] | None) -> list[models.Model]:
    # operation.services.add(service): the services are the objects whose field changes.
    owners = tracked.model._base_manager.all()
    return list(owners.filter(pk__in=pk_set) if pk_set is not None else owners.filter(**{name: target}))


def _record_many_change(tracked: Tracked, owner: models.Model, name: str, before: list[str], after: list[str]) -> None:
    event_id = owner.__dict__.get(EVENT_ATTR)
    if event_id is not None and history_change_merge(event_id=event_id, field=name, before=before, after=after):
        return
    changes = {name: {"before": before, "after": after}}
    event = history_change_record(
        instance=owner, action=ChangeAction.CHANGED, changes=changes, customer=tracked.customer_of(owner)
    )
    _remember_event(owner, event.pk)


def _remember_event(instance: models.Model, event_id: int) -> None:
    """Later many-to-many changes of this object in the same transaction join this event."""
    instance.__dict__[EVENT_ATTR] = event_id
    transaction.on_commit(lambda: instance.__dict__.pop(EVENT_ATTR, None))


def _related_names(owner: models.Model, name: str) -> list[str]:
    return sorted(str(obj) for obj in getattr(owner, name).all())


def _tracked(model: type[models.Model]) -> Tracked:
    tracked = tracked_for(model)
    if tracked is None:  # pragma: no cover - connect() only listens to tracked models
        raise LookupError(f"{model._meta.label} is not followed by the change history")
    return tracked


def _same(old: Any, new: Any) -> bool:
    # JSON text, not Python equality: 1 == 1.0 == True in Python, yet a payload changing from 1 to true changed.
    return json.dumps(jsonable(old), sort_keys=True) == json.dumps(jsonable(new), sort_keys=True)


def _shown(instance: models.Model, field: models.Field[Any, Any]) -> Any:
    raw = getattr(instance, field.attname)
    if isinstance(field, models.ForeignKey) and raw is not None and field.is_cached(instance):
        return str(field.get_cached_value(instance))
    return _shown_raw(field, raw)


def _shown_raw(field: models.Field[Any, Any], raw: Any) -> Any:
    """A field's stored value as a person reads it: a related object by its name, not its id."""
    if not isinstance(field, models.ForeignKey) or raw is None:
        return raw
    related = field.related_model._base_manager.filter(**{field.target_field.attname: raw}).first()
    return str(related) if related is not None else f"#{raw} (deleted)"
