"""Gateway forward-auth: turn the request a gateway is about to pass on into a check.

nginx `auth_request`, Traefik ForwardAuth and Envoy ext_authz (HTTP) each send the original method and
URI in their own way; the operation comes from a configured method + path mapping, the customer from a
configured header or the key's own customer, the resource from a named group `resource` in the path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from apps.apikeys.selectors import ApiPrincipal
from apps.common.exceptions import InvalidInput
from apps.enforcement.parsing import MAX_CUSTOMER_LENGTH, ParseError, parse_check
from apps.enforcement.services import DENIED, OK, CheckOutcome, check_evaluate
from apps.engine import CheckItem
from apps.limits.snapshot import Snapshot

# Where each gateway puts the original method and URI (first one present wins).
METHOD_HEADERS = ("HTTP_X_ORIGINAL_METHOD", "HTTP_X_FORWARDED_METHOD")
URI_HEADERS = ("HTTP_X_ORIGINAL_URI", "HTTP_X_FORWARDED_URI")


@dataclass(frozen=True)
class Route:
    method: str
    path: re.Pattern[str]
    operation: str


@dataclass(frozen=True)
class ForwardedRequest:
    method: str
    path: str
    customer_header: str
    ip: str


@lru_cache(maxsize=1)
def _routes(raw: str) -> tuple[Route, ...]:
    import json

    try:
        entries: list[dict[str, Any]] = json.loads(raw) if raw else []
        return tuple(
            Route(entry.get("method", "*").upper(), re.compile(entry["path"]), entry["operation"]) for entry in entries
        )
    except (ValueError, KeyError, TypeError, re.error) as error:
        raise ImproperlyConfigured(
            "QUOTA_AUTHZ_ROUTES must be a JSON list of {method, path (regex), operation}: " + str(error)
        ) from error


def authz_routes() -> tuple[Route, ...]:
    return _routes(settings.QUOTA_AUTHZ_ROUTES)


def forwarded_request(meta: dict[str, Any], own_method: str, tail: str) -> ForwardedRequest:
    method = next((meta[h] for h in METHOD_HEADERS if meta.get(h)), own_method)
    uri = next((meta[h] for h in URI_HEADERS if meta.get(h)), "/" + tail if tail else "/")
    header = "HTTP_" + settings.QUOTA_AUTHZ_CUSTOMER_HEADER.upper().replace("-", "_")
    ip_header = "HTTP_" + settings.QUOTA_AUTHZ_IP_HEADER.upper().replace("-", "_")
    ip = (meta.get(ip_header) or "").split(",")[-1].strip() or meta.get("REMOTE_ADDR", "")
    return ForwardedRequest(method.upper(), uri.split("?", 1)[0], meta.get(header, ""), ip)


def authz_evaluate(
    *, principal: ApiPrincipal, forwarded: ForwardedRequest, snapshot: Snapshot
) -> tuple[str, CheckOutcome]:
    """Decide the forwarded request: (operation, outcome). A path no route maps follows
    QUOTA_AUTHZ_UNMATCHED (allow or deny) and is reported as operation ""."""
    if forwarded.customer_header:
        principal.authorize(forwarded.customer_header)
    for route in authz_routes():
        if route.method not in ("*", forwarded.method):
            continue
        found = route.path.fullmatch(forwarded.path)
        if found:
            item = _check_item(principal, forwarded, route.operation, found.groupdict().get("resource") or "")
            return route.operation, check_evaluate(principal=principal, item=item, snapshot=snapshot)
    allowed = settings.QUOTA_AUTHZ_UNMATCHED == "allow"
    return "", CheckOutcome(allowed, OK if allowed else DENIED, 0 if allowed else None, (), {})


def _check_item(principal: ApiPrincipal, forwarded: ForwardedRequest, operation: str, resource: str) -> CheckItem:
    customer = forwarded.customer_header or principal.customer or ""
    if not customer:
        raise InvalidInput(
            f"No customer: send the {settings.QUOTA_AUTHZ_CUSTOMER_HEADER} header or use a customer-bound key.",
            fields={settings.QUOTA_AUTHZ_CUSTOMER_HEADER: ["required"]},
        )
    try:
        return parse_check(
            {"customer": customer[:MAX_CUSTOMER_LENGTH + 1], "operation": operation, "resource": resource,
             "ip": forwarded.ip}
        )  # fmt: skip
    except ParseError as error:
        raise InvalidInput("The forwarded request cannot be checked; see fields.", fields=error.fields) from None
