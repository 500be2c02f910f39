"""How values become key text: percent-encoding of key components, and the base64 of lease ids."""

from __future__ import annotations

import base64
from functools import lru_cache
from urllib.parse import quote


@lru_cache(maxsize=65536)
def enc(value: str) -> str:
    """Percent-encode one key component (injective; the result has no separator characters)."""
    return quote(value, safe="")


def b64(value: str) -> str:
    return base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")


def unb64(value: str) -> str:
    decoded = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_", validate=True).decode()
    if not decoded:
        raise ValueError("empty")
    return decoded
