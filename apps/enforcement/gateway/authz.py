"""Gateway forward-auth: turn the request a gateway is about to pass on into a check.

nginx `auth_request`, Traefik ForwardAuth and Envoy ext_authz (HTTP) each send the original method and
URI in their own way; the operation comes from a configured method + path mapping, the customer from a
configured header or the key's own customer, the resource from a named group `resource` in the path.
Routes match the path in its canonical spelling (apps/enforcement/gateway/paths.py), so `/streams/`, `//streams` or
`/%73treams` are counted like `/streams`; a path with no canonical spelling (an encoded slash) is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from apps.api.fields import ParseError
from apps.apikeys.selectors import ApiPrincipal
from apps.common.exceptions import Forbidden, InvalidInput
from apps.enforcement.decisions.outcomes import DENIED, OK, CheckOutcome
from apps.enforcement.decisions.parsing import MAX_CUSTOMER_LENGTH, parse_check
from apps.enforcement.decisions.services import check_evaluate
from apps.enforcement.gateway.paths import PathRefused, path_normalize
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
    path: str  # canonical (path_normalize), or "" when refused
    customer_header: str
    ip: str
    path_refused: str = ""  # why the path has no canonical spelling; the request is then refused


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
    try:
        path, refused = path_normalize(uri), ""
    except PathRefused as error:
        path, refused = "", str(error)
    return ForwardedRequest(method.upper(), path, meta.get(header, ""), ip, refused)


def authz_evaluate(
    *, principal: ApiPrincipal, forwarded: ForwardedRequest, snapshot: Snapshot
) -> tuple[str, CheckOutcome]:
    """Decide the forwarded request: (operation, outcome). A path no route maps follows
    QUOTA_AUTHZ_UNMATCHED (allow or deny) and is reported as operation ""."""
    if forwarded.customer_header:
        principal.authorize(forwarded.customer_header)
    if forwarded.path_refused:
        raise Forbidden(forwarded.path_refused, code="path_refused")
    for route in authz_routes():
        if route.method not in ("*", forwarded.method):
            continue
        found = _route_match(route, forwarded.path)
        if found:
            item = _check_item(principal, forwarded, route.operation, found.groupdict().get("resource") or "")
            return route.operation, check_evaluate(principal=principal, item=item, snapshot=snapshot)
    allowed = settings.QUOTA_AUTHZ_UNMATCHED == "allow"
    return "", CheckOutcome(allowed, OK if allowed else DENIED, 0 if allowed else None, (), {})


def _route_match(route: Route, path: str) -> re.Match[str] | None:
    # Canonical paths have no trailing slash; a route written with one ("/streams/") still matches.
    return route.path.fullmatch(path) or (route.path.fullmatch(path + "/") if path != "/" else None)


def _check_item(principal: ApiPrincipal, forwarded: ForwardedRequest, operation: str, resource: str) -> CheckItem:
    customer = forwarded.customer_header or principal.customer or ""
    if not customer:
        raise InvalidInput(
            f"No customer: send the {settings.QUOTA_AUTHZ_CUSTOMER_HEADER} header or use a customer-bound key.",
            fields={settings.QUOTA_AUTHZ_CUSTOMER_HEADER: ["required"]},
        )
    fields = {"customer": customer[: MAX_CUSTOMER_LENGTH + 1], "operation": operation}
    # Absent rather than empty: the check API refuses empty text (a route without a resource group, no address).
    fields.update({name: value for name, value in (("resource", resource), ("ip", forwarded.ip)) if value})
    try:
        return parse_check(fields)
    except ParseError as error:
        raise InvalidInput("The forwarded request cannot be checked; see fields.", fields=error.fields) from None
