"""Reading toggles for the service API: compiled once per config snapshot, answered from memory.

What a key sees: every toggle without a customer; a toggle scoped to a customer only by keys bound to that
customer and by service-wide keys (which may act for any customer). Another customer's toggle does not exist
for a bound key (404, not 403: its name is not revealed).

The snapshot (apps.limits.snapshot) keeps each toggle's name, state and payload but not its customer or
when it changed, so the toggles are read here in one query the first time a new snapshot is asked for, and
every later request of that snapshot is answered from memory, bodies and ETags included: no database query
per request. A new snapshot (the config version moved) is read again. If PostgreSQL is down at that moment
the last compiled toggles stay in force, as the snapshot does; with none yet, the answer is 503.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from django.db import DatabaseError

from apps.common.exceptions import NotFound
from apps.limits.snapshot_holder import ConfigUnavailable
from apps.toggles.models import FeatureToggle

if TYPE_CHECKING:
    from apps.apikeys.selectors import ApiPrincipal
    from apps.limits.snapshot import Snapshot

logger = logging.getLogger(__name__)

SERVICE_WIDE = ""  # the scope of a service-wide key: it sees every toggle


@dataclass(frozen=True)
class CompiledToggle:
    name: str
    enabled: bool
    payload: Any
    customer: str | None  # None: every key sees it
    updated_at: str  # ISO 8601, UTC

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "enabled": self.enabled,
            "payload": self.payload,
            "customer": self.customer,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True)
class Rendered:
    """A JSON body ready to send and its ETag: strong, from those exact bytes; or weak, from the part that
    matters (`validator`) when the rest may move without the caller needing a new copy."""

    body: bytes
    etag: str

    @classmethod
    def of(cls, data: Any, validator: Any = None) -> Rendered:
        body = orjson.dumps(data)
        if validator is None:
            return cls(body=body, etag=f'"{_digest(body)}"')
        return cls(body=body, etag=f'W/"{_digest(orjson.dumps(validator))}"')


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()[:32]


def toggles_compiled() -> dict[str, CompiledToggle]:
    """Every toggle by name, with its customer (one query)."""
    rows = FeatureToggle.objects.values_list("name", "enabled", "payload", "customer__external_id", "updated_at")
    return {
        name: CompiledToggle(name, enabled, payload, customer, updated_at.isoformat().replace("+00:00", "Z"))
        for name, enabled, payload, customer, updated_at in rows
    }


@dataclass
class ToggleIndex:
    """The toggles of one snapshot, and the bodies rendered from them so far (per scope, per name)."""

    snapshot: Snapshot
    toggles: Mapping[str, CompiledToggle]
    lists: dict[str, Rendered] = field(default_factory=dict)
    ones: dict[str, Rendered] = field(default_factory=dict)

    def listing(self, scope: str) -> Rendered:
        rendered = self.lists.get(scope)
        if rendered is None:
            visible = _sorted_dicts(toggle for toggle in self.toggles.values() if _visible(toggle, scope))
            # Weak, from the toggles alone: any config change moves `version` (a new customer seen, a limit
            # edited), and that alone must not make every service download the toggles again.
            rendered = self.lists[scope] = Rendered.of(
                {"toggles": visible, "version": self.snapshot.version}, validator=visible
            )
        return rendered

    def one(self, name: str, scope: str) -> Rendered | None:
        toggle = self.toggles.get(name)
        if toggle is None or not _visible(toggle, scope):
            return None
        rendered = self.ones.get(name)
        if rendered is None:
            rendered = self.ones[name] = Rendered.of(toggle.as_dict())
        return rendered


def _visible(toggle: CompiledToggle, scope: str) -> bool:
    return scope == SERVICE_WIDE or toggle.customer is None or toggle.customer == scope


def _sorted_dicts(toggles: Iterable[CompiledToggle]) -> list[dict[str, Any]]:
    return [toggle.as_dict() for toggle in sorted(toggles, key=lambda toggle: toggle.name)]


_index: ToggleIndex | None = None
_index_lock = threading.Lock()


def toggle_index(snapshot: Snapshot) -> ToggleIndex:
    """The toggles of `snapshot`, read from the database only the first time this snapshot is asked for."""
    global _index
    index = _index
    if index is not None and index.snapshot is snapshot:
        return index
    with _index_lock:
        if _index is not None and _index.snapshot is snapshot:
            return _index
        try:
            _index = ToggleIndex(snapshot=snapshot, toggles=toggles_compiled())
        except DatabaseError as error:
            if _index is None:
                raise ConfigUnavailable("The feature toggles cannot be read: the database is unreachable.") from error
            # PostgreSQL unreachable: keep answering with the toggles we have (the snapshot holder does the same).
            logger.exception("Could not read the toggles; keeping those of config version %s", _index.snapshot.version)
        return _index


def toggle_index_reset() -> None:
    """Forget the compiled toggles (tests)."""
    global _index
    _index = None


def principal_scope(principal: ApiPrincipal) -> str:
    return principal.customer if principal.customer is not None else SERVICE_WIDE


def toggles_visible(*, principal: ApiPrincipal, snapshot: Snapshot) -> Rendered:
    """`{"toggles": [...sorted by name], "version": N}` as the key sees it, rendered."""
    return toggle_index(snapshot).listing(principal_scope(principal))


def toggle_visible(*, principal: ApiPrincipal, name: str, snapshot: Snapshot) -> Rendered:
    """One toggle as the key sees it, rendered; NotFound when there is none of that name for this key."""
    rendered = toggle_index(snapshot).one(name, principal_scope(principal))
    if rendered is None:
        raise NotFound(f"There is no feature toggle named “{name}”.", code="unknown_toggle")
    return rendered
