"""Signed webhook POSTs behind the same SSRF guard as the toggles source (apps/common/outbound.py).

The host is resolved once, every address is judged by `address_refusal` (loopback,
private, link-local, mapped IPv4 ...), and the socket connects only to the addresses judged, so a DNS answer
that changes between check and connect cannot slip a private address through. Redirects are not followed,
proxy variables are not read. QUOTA_ALERTS_WEBHOOK_ALLOW_PRIVATE=true lifts the address check and accepts
plain http:// (tests, a receiver on a trusted local network).

One attempt takes QUOTA_ALERTS_WEBHOOK_TIMEOUT_S at most, from connecting to the end of the answer
(apps/common/outbound_deadline.py), however slowly the receiver sends it.

Signature: `X-Quota-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>`, with the Unix
timestamp in `X-Quota-Timestamp`, so a receiver can refuse an old message replayed.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
from urllib.parse import urlsplit

from django.conf import settings

from apps.common.outbound import AddressRefused, ConnectFailed, address_refusal
from apps.common.outbound_deadline import deadline_connection
from apps.toggles.sources import source_label

USER_AGENT = "quota-platform-alerts/1"
SIGNATURE_HEADER = "X-Quota-Signature"
TIMESTAMP_HEADER = "X-Quota-Timestamp"
ALLOW_PRIVATE_HINT = "set QUOTA_ALERTS_WEBHOOK_ALLOW_PRIVATE=true only for a receiver on a trusted local network"
DEFAULT_TIMEOUT_S = 5.0
RESPONSE_READ_BYTES = 64 * 1024  # of the receiver's answer: read (so the connection ends cleanly), never used


class WebhookRefused(Exception):
    """Refused before any connection (scheme, address, redirect): retrying cannot help."""


class WebhookFailed(Exception):
    """The receiver could not be reached or did not answer 2xx: worth another attempt."""


def allow_private() -> bool:
    return bool(getattr(settings, "QUOTA_ALERTS_WEBHOOK_ALLOW_PRIVATE", False))


def webhook_timeout_s() -> float:
    return float(getattr(settings, "QUOTA_ALERTS_WEBHOOK_TIMEOUT_S", DEFAULT_TIMEOUT_S))


def signature(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def webhook_url_refusal(url: str, *, allow_private: bool) -> str | None:
    """Why `url` cannot be a webhook (checked when a rule is saved; addresses are judged again when sending)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http"):
        return "only https:// URLs can receive alerts"
    if parts.scheme == "http" and not allow_private:
        return f"plain http:// is refused; use https:// ({ALLOW_PRIVATE_HINT})"
    if not parts.hostname:
        return "the URL names no host"
    try:
        literal = ipaddress.ip_address(parts.hostname)
    except ValueError:
        return None
    if not allow_private and (reason := address_refusal(literal)):
        return f"{literal} is not a public address: {reason}; {ALLOW_PRIVATE_HINT}"
    return None


def webhook_post(url: str, body: bytes, headers: dict[str, str], *, timeout_s: float, allow_private: bool) -> int:
    """POST `body` to `url`; the HTTP status (2xx). Raises WebhookRefused or WebhookFailed."""
    if reason := webhook_url_refusal(url, allow_private=allow_private):
        raise WebhookRefused(f"{source_label(url)}: {reason}")
    parts = urlsplit(url)
    https = parts.scheme == "https"
    port = parts.port or (http.client.HTTPS_PORT if https else http.client.HTTP_PORT)
    # One deadline for the whole exchange: a receiver that trickles its answer must not hold a worker for longer.
    connection = deadline_connection(
        parts.hostname or "", port, https=https, timeout_s=timeout_s, allow_private=allow_private
    )
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    label = source_label(url)
    try:
        connection.request("POST", target, body=body, headers={**headers, "User-Agent": USER_AGENT})
        response = connection.getresponse()
        response.read(RESPONSE_READ_BYTES)
    except AddressRefused as refused:
        where = f"{refused.host} resolves to {refused.address}"
        raise WebhookRefused(f"{where}, not a public address: {refused.reason}; {ALLOW_PRIVATE_HINT}") from None
    except ConnectFailed as error:
        raise WebhookFailed(str(error)) from None
    except TimeoutError:
        raise WebhookFailed(f"{label} did not answer within {timeout_s:g} s") from None
    except (OSError, http.client.HTTPException) as error:
        raise WebhookFailed(f"cannot reach {label}: {error or type(error).__name__}") from None
    finally:
        connection.close()
    if 300 <= response.status < 400:
        raise WebhookRefused(f"{label} answered HTTP {response.status}; redirects are not followed")
    if not 200 <= response.status < 300:
        raise WebhookFailed(f"{label} answered HTTP {response.status} {response.reason}".rstrip())
    return response.status
