"""Lease ids and lease records (KeyLayout's part for leases; keys.py has the whole layout).

A lease id is `<b64 counter key without prefix>.<b64 customer>.<random>`; the lease's member in the
concurrency set is `<b64 customer>.<random>`, so editing the customer part names a member that
does not exist, and a decoded key is accepted only if it is a concurrency counter key.

    lease record <prefix>:l:{<tag of its concurrency key>}:<member>   string, what renewing and releasing the lease
                 need (store/sessions.py); TTL until the lease expires (an allocation's: ALLOCATION_TTL_MS)
"""

from __future__ import annotations

import binascii
import re
import secrets

from apps.engine.key_text import b64, unb64
from apps.engine.registry import LEASE_SET

_LEASE_KEY = re.compile(r"c:\{[^{}]+\}:cc:[^:{}]+(?::[^:{}]*)*")


class LeaseIds:
    """Mints and reads lease ids for the key layout of one prefix (mixed into KeyLayout)."""

    prefix: str

    def new_lease(self, counter_key: str, customer: str) -> tuple[str, str]:
        """Mint (lease_id, member) for a lease on `counter_key` held by `customer`."""
        owner = b64(customer)
        member = f"{owner}.{secrets.token_hex(16)}"
        return f"{b64(counter_key[len(self.prefix) + 1 :])}.{member}", member

    def lease_record_key(self, counter_key: str, member: str) -> str:
        """The record of the lease `member` holds on concurrency `counter_key`, in the same hash tag."""
        tag = counter_key[counter_key.index("{") : counter_key.index("}") + 1]
        return f"{self.prefix}:l:{tag}:{member}"

    def lease_target(self, lease_id: str) -> tuple[str, str] | None:
        """(counter key, member) named by a lease id, or None if the id is malformed or not a lease."""
        parts = lease_id.split(".") if isinstance(lease_id, str) else []
        if len(parts) != 3 or not parts[2]:
            return None
        try:
            rest = unb64(parts[0])
            unb64(parts[1])
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        if not _LEASE_KEY.fullmatch(rest) or f":{LEASE_SET.code}:" not in rest:
            return None
        return f"{self.prefix}:{rest}", f"{parts[1]}.{parts[2]}"


def lease_owner_part(customer: str) -> str:
    """How a lease member names its customer (the part before its first dot)."""
    return b64(customer)


def lease_owner(lease_id: str) -> str | None:
    """The customer who acquired `lease_id` (no lookup needed), or None if the id is malformed."""
    parts = lease_id.split(".") if isinstance(lease_id, str) else []
    if len(parts) != 3:
        return None
    try:
        return unb64(parts[1])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
