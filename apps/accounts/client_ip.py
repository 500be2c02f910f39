from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest


def client_ip_address(request: HttpRequest) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: the address the admin login lockout counts per."""
    return client_ip_of_meta(request.META)


def client_ip_of_meta(meta: Mapping[str, Any]) -> str | None:
    """The client's address among a request's META (also a DRF request's, which is no HttpRequest).

    Behind TRUSTED_PROXY_COUNT proxies that each append to X-Forwarded-For, the client is the entry the
    outermost proxy added, counted from the right; entries further left were sent by the client and are
    not trusted. Without proxies (0), REMOTE_ADDR, which no client can forge.
    """
    remote: str | None = meta.get("REMOTE_ADDR")
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies <= 0:
        return remote
    forwarded = [part.strip() for part in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    return forwarded[-proxies] if len(forwarded) >= proxies else remote
