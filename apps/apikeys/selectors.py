"""Reading API keys: the live keys compiled for the config snapshot, and who is calling behind a raw key.

Resolving a key reads only the compiled keys (no database): the service API looks them up in the snapshot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from apps.apikeys.models import ApiKey, Service
from apps.apikeys.services import api_key_hash
from apps.common.exceptions import Forbidden


@dataclass(frozen=True)
class KeyConfig:
    """A live key as the snapshot keeps it: the hash stands in for the secret."""

    prefix: str
    key_hash: str
    service: str
    customer: str | None
    operations: tuple[str, ...]  # empty: every operation


@dataclass(frozen=True)
class ApiPrincipal:
    """The caller behind a valid key: its service, and the customer it is bound to (if any)."""

    prefix: str
    service: str
    customer: str | None
    operations: tuple[str, ...]
    # DRF's IsAuthenticated asks the request's "user" this.
    is_authenticated = True

    @classmethod
    def of(cls, key: KeyConfig) -> ApiPrincipal:
        return cls(prefix=key.prefix, service=key.service, customer=key.customer, operations=key.operations)

    def may_use_customer(self, customer: str) -> bool:
        return self.customer is None or self.customer == customer

    def may_use_operation(self, operation: str) -> bool:
        return not self.operations or operation in self.operations

    def authorize(self, customer: str | None, operation: str | None = None) -> None:
        """Refuse (403) a customer-bound key naming another customer, or an operation its service may not use.
        `customer` None: any customer (a service-wide read), checked for the operation only."""
        if customer is not None and not self.may_use_customer(customer):
            raise Forbidden("This API key is bound to another customer.", code="forbidden_customer")
        if operation is not None and not self.may_use_operation(operation):
            raise Forbidden(f"This API key may not be used for operation {operation}.", code="forbidden_operation")

    def authorize_shared_report(self, limit: str, shared: bool) -> None:
        """Refuse (403) a customer-bound key reporting state (allocations held, hybrid counts) of limit `limit` when
        its counter is `shared` by several customers: what it reports would change the other customers' decisions.
        Deciding through /check stays open to it: a decision is bounded by the limit, a report is not."""
        if shared and self.customer is not None:
            raise Forbidden(
                f"Limit {limit} is shared by several customers: only a service-wide API key may report its state.",
                code="shared_limit",
            )


def keys_compiled() -> dict[str, KeyConfig]:
    """Every key not revoked, by prefix, with its service's operations (for the config snapshot)."""
    operations: dict[int, tuple[str, ...]] = defaultdict(tuple)
    for service_id, name in Service.operations.through.objects.values_list("service_id", "operation__name"):
        operations[service_id] += (name,)
    keys = ApiKey.objects.filter(revoked_at__isnull=True).select_related("service", "customer")
    return {
        key.prefix: KeyConfig(
            prefix=key.prefix,
            key_hash=key.key_hash,
            service=key.service.name,
            customer=key.customer.external_id if key.customer else None,
            operations=tuple(sorted(operations[key.service_id])),
        )
        for key in keys
    }


def api_principal_of_key(*, raw_key: str, keys: Mapping[str, KeyConfig]) -> ApiPrincipal | None:
    """Who calls with `raw_key`, among `keys` (by prefix); None for an unknown, wrong or revoked key.

    One hash and one dict lookup: the principals are indexed by key hash once per `keys` mapping (the snapshot's
    is immutable, so the index lives as long as the snapshot). Every key is hashed, known or not, so an unknown
    prefix costs the same time as a wrong secret; a lookup by the hash of what the caller sent tells them nothing
    about the stored hashes (finding a near miss would take a SHA-256 preimage)."""
    return _principals_by_hash(keys).get(api_key_hash(raw_key))


# The last index built, with the mapping it was built from: workers serve one snapshot at a time.
_index: tuple[Mapping[str, KeyConfig] | None, dict[str, ApiPrincipal]] = (None, {})


def _principals_by_hash(keys: Mapping[str, KeyConfig]) -> dict[str, ApiPrincipal]:
    global _index
    built_from, index = _index
    if built_from is not keys:
        # Only a key filed under its own prefix counts, as when keys were looked up by the prefix sent.
        index = {key.key_hash: ApiPrincipal.of(key) for prefix, key in keys.items() if key.prefix == prefix}
        _index = (keys, index)  # one tuple: a thread reading meanwhile sees the old pair or the new one
    return index
