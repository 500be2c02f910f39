"""Reading the external toggles document: a local file, or an HTTPS URL behind an SSRF guard.

The URL is fetched with the standard library's http.client (urllib's transport) rather than
urllib.request's opener, because the opener would follow redirects, honour proxy variables and
resolve the host a second time when it connects. Here the guard sits in the connection itself:
the host is resolved once, every address it resolves to is checked, and the socket connects only
to the addresses that were checked (apps/common/outbound.py, shared with the alert webhooks), so a DNS
answer that changes between check and connect (DNS rebinding) cannot slip a private address through.
Redirects are never followed.

Plain http:// is accepted only together with QUOTA_TOGGLES_ALLOW_PRIVATE (local tests and
development): the document decides who is limited, so in production it travels over TLS.
"""

from __future__ import annotations

import http.client
import ssl
from pathlib import Path
from urllib.parse import urlsplit

from apps.common.outbound import AddressRefused, ConnectFailed
from apps.common.outbound_deadline import deadline_connection

MAX_BODY_BYTES = 1024 * 1024
READ_CHUNK_BYTES = 64 * 1024
USER_AGENT = "quota-platform-toggles-refresh/1"
ALLOW_PRIVATE_HINT = "set QUOTA_TOGGLES_ALLOW_PRIVATE=true only for a source on a trusted local network"


class SourceUnavailable(Exception):
    """The source could not be read; the message says why in words (it goes into the report)."""


class SourceRefused(SourceUnavailable):
    """The source was refused before any connection was made (scheme, address, redirect)."""


def source_is_url(source: str) -> bool:
    return "://" in source


def source_label(source: str) -> str:
    """The source as it may be logged: a URL loses its query string and credentials (tokens live there)."""
    if not source_is_url(source):
        return source
    parts = urlsplit(source)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def source_fetch(source: str, *, timeout_s: float, allow_private: bool, max_bytes: int = MAX_BODY_BYTES) -> bytes:
    """The bytes of the document at `source` (a file path or a URL), at most `max_bytes` of them.

    Raises SourceRefused before connecting when the URL is not allowed, SourceUnavailable when the
    source cannot be read (missing file, unreachable host, timeout, HTTP error, too large).
    """
    if source_is_url(source):
        return _fetch_url(source, timeout_s=timeout_s, allow_private=allow_private, max_bytes=max_bytes)
    return file_read_capped(Path(source), max_bytes=max_bytes)


def file_read_capped(path: Path, *, max_bytes: int = MAX_BODY_BYTES) -> bytes:
    try:
        with path.open("rb") as handle:
            body = handle.read(max_bytes + 1)
    except OSError as error:
        raise SourceUnavailable(f"cannot read {path}: {error.strerror or error}") from None
    if len(body) > max_bytes:
        raise SourceUnavailable(f"{path} is larger than the {_size_text(max_bytes)} a toggles document may have")
    return body


def _fetch_url(url: str, *, timeout_s: float, allow_private: bool, max_bytes: int) -> bytes:
    connection = _connection_for(url, timeout_s=timeout_s, allow_private=allow_private)
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    label = source_label(url)
    try:
        connection.request("GET", target, headers={"Accept": "application/json", "User-Agent": USER_AGENT})
        response = connection.getresponse()
        _check_status(response, label)
        return _read_capped(response, label, max_bytes=max_bytes)
    except AddressRefused as refused:
        raise SourceRefused(f"{refused}; refused ({ALLOW_PRIVATE_HINT})") from None
    except ConnectFailed as error:
        raise SourceUnavailable(str(error)) from None
    except TimeoutError:
        raise SourceUnavailable(f"{label} did not answer within {timeout_s:g} s") from None
    except ssl.SSLError as error:
        raise SourceUnavailable(f"TLS with {label} failed: {error.reason or error}") from None
    except (OSError, http.client.HTTPException) as error:
        raise SourceUnavailable(f"cannot reach {label}: {_error_text(error)}") from None
    finally:
        connection.close()


def _connection_for(url: str, *, timeout_s: float, allow_private: bool) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    label = source_label(url)
    if parts.scheme not in ("https", "http"):
        raise SourceRefused(f"{label}: only https:// URLs (or a file path) can be a toggles source")
    if parts.scheme == "http" and not allow_private:
        raise SourceRefused(f"{label}: plain http:// is refused; use https:// ({ALLOW_PRIVATE_HINT})")
    if not parts.hostname:
        raise SourceRefused(f"{label}: the URL names no host")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise SourceRefused(f"{label}: the port is not a number from 1 to 65535")
    https = parts.scheme == "https"
    # The port is always given: http.client would otherwise read the last group of a bare IPv6 host as one.
    default_port = http.client.HTTPS_PORT if https else http.client.HTTP_PORT
    # One deadline for the whole exchange (status line and headers included): a source that drips bytes cannot
    # hold the refresh job past timeout_s.
    return deadline_connection(
        parts.hostname, port or default_port, https=https, timeout_s=timeout_s, allow_private=allow_private
    )


def _check_status(response: http.client.HTTPResponse, label: str) -> None:
    if 300 <= response.status < 400:
        where = response.getheader("Location") or "nowhere"
        raise SourceRefused(
            f"{label} answered HTTP {response.status} (redirect to {where}); redirects are not followed"
        )
    if response.status != http.client.OK:
        raise SourceUnavailable(f"{label} answered HTTP {response.status} {response.reason}".rstrip())


def _read_capped(response: http.client.HTTPResponse, label: str, *, max_bytes: int) -> bytes:
    too_large = f"{label} sent more than the {_size_text(max_bytes)} a toggles document may have"
    declared = response.getheader("Content-Length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise SourceUnavailable(too_large)
    chunks: list[bytes] = []
    received = 0
    while chunk := response.read1(READ_CHUNK_BYTES):
        received += len(chunk)
        if received > max_bytes:
            raise SourceUnavailable(too_large)
        chunks.append(chunk)
    return b"".join(chunks)


def _error_text(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return str(error) or type(error).__name__


def _size_text(size: int) -> str:
    if size % (1024 * 1024) == 0:
        return f"{size // (1024 * 1024)} MiB"
    return f"{size} bytes"
