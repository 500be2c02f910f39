"""What every section of the configuration file has in common, and how sections find what they refer to."""

import copy
from dataclasses import dataclass
from typing import Any, ClassVar

from django.db import models

from apps.apikeys.models import ApiKey
from apps.customers.models import Customer, Plan
from apps.limits.config_io.fields import Parser
from apps.limits.config_io.report import value_shown
from apps.limits.models import Limit, Operation

REQUIRED = object()
Entry = dict[str, Any]
Identity = tuple[Any, ...]

# What a reference names: target -> (model, field that holds the name, what to call it in messages).
REFERENCE_TARGETS: dict[str, tuple[type[models.Model], str, str]] = {
    "operations": (Operation, "name", "operation"),
    "plans": (Plan, "name", "plan"),
    "customers": (Customer, "external_id", "customer"),
    "limits": (Limit, "name", "limit"),
    "api_keys": (ApiKey, "prefix", "API key prefix"),
}


@dataclass(frozen=True)
class Key:
    """One key of an entry: how to parse it, its default (REQUIRED if none) and what it refers to."""

    name: str
    parse: Parser
    default: Any = REQUIRED
    refers_to: str | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def default_value(self) -> Any:
        return copy.deepcopy(self.default)


class Unresolved(Exception):
    """A reference to an object that is not in the database: its own entry was refused."""

    def __init__(self, target: str, value: str) -> None:
        super().__init__(f"{target}: {value}")
        self.target = target
        self.value = value


class Lookup:
    """Finds referenced objects by name, in the database as it is inside the import's transaction."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], models.Model] = {}

    def __call__(self, target: str, value: str | None) -> Any:
        if value is None:
            return None
        if (target, value) not in self._found:
            model, field, _ = REFERENCE_TARGETS[target]
            found = model._default_manager.filter(**{field: value}).first()
            if found is None:
                raise Unresolved(target, value)
            self._found[(target, value)] = found
        return self._found[(target, value)]


class Section:
    """One top-level list of the file: its keys, identity, and the mapping to and from its model."""

    name: ClassVar[str]
    model: ClassVar[type[models.Model]]
    keys: ClassVar[tuple[Key, ...]]
    identity_keys: ClassVar[tuple[str, ...]] = ("name",)
    # Model field -> key of the entry, where they differ, so that model errors name the key.
    key_of_field: ClassVar[dict[str, str]] = {}

    def queryset(self) -> models.QuerySet[Any]:
        return self.model._default_manager.all()

    def finish(self, entry: Entry) -> Entry:
        """Checks and canonical forms that need more than one key; raises FieldError(key=...)."""
        return entry

    def export_entry(self, obj: Any) -> Entry:
        raise NotImplementedError

    def model_values(self, entry: Entry, lookup: Lookup) -> dict[str, Any]:
        raise NotImplementedError

    def many_values(self, entry: Entry, lookup: Lookup) -> dict[str, list[Any]]:
        """Many-to-many values, set after the object is saved."""
        return {}

    def prune_blocker(self, obj: Any) -> str | None:
        """Why `obj` must not be deleted by --prune, or None."""
        return None

    def identity(self, entry: Entry) -> Identity:
        return tuple(entry[key] for key in self.identity_keys)

    def identity_text(self, entry: Entry) -> str:
        """'name: foo' or 'customer: acct-1, limit: foo': the identity keys that have a value."""
        parts = [f"{key}: {value_shown(entry[key])}" for key in self.identity_keys if _printable(entry.get(key))]
        return ", ".join(parts)

    def describe(self, entry: Entry) -> str:
        """How the report names an object: its name, or its identity keys."""
        if len(self.identity_keys) == 1:
            return str(entry[self.identity_keys[0]])
        return self.identity_text(entry)

    def sort_key(self, entry: Entry) -> tuple[str, ...]:
        return tuple("" if value is None else str(value) for value in self.identity(entry))


def _printable(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool) and value != ""
