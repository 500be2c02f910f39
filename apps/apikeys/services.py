"""Creating and revoking API keys. The secret exists only in the return value of api_key_create."""

import datetime
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.apikeys.models import ApiKey, Service
from apps.customers.models import Customer
from apps.history.context import history_via

KEY_PREFIX_MARK = "qp_"
PREFIX_RANDOM_BYTES = 4
SECRET_RANDOM_BYTES = 32
PREFIX_ATTEMPTS = 5


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    secret: str


def api_key_hash(raw_key: str) -> str:
    # Keys carry 256 random bits, so a plain SHA-256 is enough; no slow KDF needed.
    return hashlib.sha256(raw_key.encode()).hexdigest()


def api_key_matches(raw_key: str, key_hash: str) -> bool:
    return hmac.compare_digest(api_key_hash(raw_key), key_hash)


def api_key_prefix_of(raw_key: str) -> str:
    """The visible part of a raw key ('qp_1a2b3c4d' of 'qp_1a2b3c4d.secret'); '' if malformed."""
    prefix, dot, _ = raw_key.partition(".")
    return prefix if dot and prefix.startswith(KEY_PREFIX_MARK) else ""


def api_key_create(*, service: Service, customer: Customer | None = None, name: str = "") -> IssuedKey:
    for _ in range(PREFIX_ATTEMPTS):
        prefix = KEY_PREFIX_MARK + secrets.token_hex(PREFIX_RANDOM_BYTES)
        raw_key = f"{prefix}.{secrets.token_urlsafe(SECRET_RANDOM_BYTES)}"
        api_key = ApiKey(service=service, customer=customer, name=name, prefix=prefix, key_hash=api_key_hash(raw_key))
        api_key.full_clean()
        try:
            with transaction.atomic(), history_via("api key create"):
                api_key.save()
        except IntegrityError:
            continue  # prefix collision: draw again
        return IssuedKey(api_key=api_key, secret=raw_key)
    raise RuntimeError("Could not draw a unique API key prefix; try again.")


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        with history_via("api key revoke"):
            api_key.save(update_fields=["revoked_at", "updated_at"])
    return api_key


def api_keys_mark_used(*, last_used: dict[str, datetime.datetime]) -> int:
    """Record when keys were last used. A plain UPDATE: no signal, so no config version bump."""
    updated = 0
    for prefix, used_at in last_used.items():
        updated += ApiKey.objects.filter(prefix=prefix).update(last_used_at=used_at)
    return updated
