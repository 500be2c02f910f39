"""Reading API keys: the live keys compiled for the config snapshot, and who is calling behind a raw key.

Resolving a key reads only the compiled keys (no database): the service API looks them up in the snapshot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from apps.apikeys.models import ApiKey, Service
from apps.apikeys.services import api_key_matches, api_key_prefix_of
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
    """Who calls with `raw_key`, among `keys` (by prefix); None for an unknown, wrong or revoked key."""
    key = keys.get(api_key_prefix_of(raw_key))
    if key is None:
        # Hash anyway so an unknown prefix costs the same time as a wrong secret.
        api_key_matches(raw_key, "0" * 64)
        return None
    if not api_key_matches(raw_key, key.key_hash):
        return None
    return ApiPrincipal.of(key)
