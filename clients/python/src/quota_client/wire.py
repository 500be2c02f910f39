"""Reading the platform's answers: decisions, the one error shape, and which failures are worth a retry."""

from __future__ import annotations

import json
from typing import Any

from quota_client.errors import AccessDenied, InvalidRequest, PlatformUnavailable, QuotaError
from quota_client.transport import HttpResponse
from quota_client.types import Decision

# No answer worth keeping: a proxy or the server failed in passing; the same request (same request id) may work.
RETRYABLE_STATUSES = frozenset({500, 502, 503, 504})
# The platform's own 503: its counter store is down and the limit's policy is `closed`. That is an answer.
STORE_UNAVAILABLE = "store_unavailable"
DECISION_STATUSES = frozenset({200, 201, 403, 429})


def json_of(response: HttpResponse) -> Any:
    try:
        return json.loads(response.body) if response.body else None
    except (ValueError, UnicodeDecodeError):
        return None


def error_detail(body: Any) -> tuple[str, str, dict[str, Any]]:
    """(code, message, fields) from {"error": {...}}, or empty values for any other body."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return "", "", {}
    fields = error.get("fields")
    return str(error.get("code", "")), str(error.get("message", "")), fields if isinstance(fields, dict) else {}


def is_retryable(response: HttpResponse) -> bool:
    if response.status not in RETRYABLE_STATUSES:
        return False
    return error_detail(json_of(response))[0] != STORE_UNAVAILABLE


def error_of(response: HttpResponse, url: str) -> QuotaError:
    """The exception for an answer that is not a decision."""
    status = response.status
    code, message, fields = error_detail(json_of(response))
    if status in (401, 403, 429):
        return AccessDenied(message or f"The platform refused the API key (HTTP {status}).", code=code, status=status)
    if status in (400, 404, 405, 413, 415, 422):
        return InvalidRequest(
            message or f"The platform refused the request (HTTP {status}).", code=code, status=status, fields=fields
        )
    if status >= 500:
        return PlatformUnavailable(
            message or f"The quota platform at {url} failed (HTTP {status}).",
            code=code or "server_error",
            status=status,
        )
    return PlatformUnavailable(
        f"Unexpected HTTP {status} from {url}; is base_url the platform's address?",
        code="unexpected_response",
        status=status,
    )


def decision_of(response: HttpResponse, url: str, request_id: str | None) -> Decision:
    """A check's decision (200, 429 or 403 with a decision body); raises for anything else."""
    body = json_of(response)
    if response.status in DECISION_STATUSES and isinstance(body, dict) and "allowed" in body:
        try:
            return Decision.from_body(body, request_id)
        except (KeyError, TypeError) as error:
            raise PlatformUnavailable(
                f"The platform's answer is missing {error}.", code="unexpected_response", status=response.status
            ) from None
    raise error_of(response, url)


def body_or_raise(response: HttpResponse, url: str, *statuses: int) -> dict[str, Any]:
    """The JSON object of an expected status; raises the matching error otherwise."""
    body = json_of(response)
    if response.status in statuses and isinstance(body, dict):
        return body
    if response.status in statuses:
        raise PlatformUnavailable(
            f"The platform answered HTTP {response.status} without a JSON object.", code="unexpected_response"
        )
    raise error_of(response, url)
