"""The one decision core of POST /api/v1/check and /api/v1/check/batch: from what a request sends (its API key
header, Content-Type and body bytes) to what it is answered (status, headers, body bytes).

Two doors call it and add nothing of their own to an answer's body: the DRF views (apis.py: routing under Django's
middleware, the OpenAPI schema) and the lean WSGI route (quota_platform/lean_door.py), which skips Django's
middleware and DRF's request machinery. Whatever DRF did for these endpoints happens here, in DRF's order:
authenticate (401, 429 for too many bad keys), then the body (415 for a Content-Type other than JSON, 413 past
DATA_UPLOAD_MAX_MEMORY_SIZE, 400 for malformed JSON), then the check; an empty body is `{}`, as DRF reads it.
Every error is rendered by the API's one exception handler (apps/api/exception_handlers.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings
from rest_framework import exceptions

from apps.api.authentication import AUTHENTICATE_HEADER, principal_of_header
from apps.api.exception_handlers import error_response_handler
from apps.api.renderers import OrjsonRenderer, body_size_check, is_json_media_type, json_of_body
from apps.apikeys.selectors import ApiPrincipal
from apps.common.exceptions import PayloadTooLarge
from apps.enforcement.decisions.answers import STATUS_BY_CODE, observe, outcome_body, outcome_headers
from apps.enforcement.decisions.parsing import BatchTooLarge, parse_batch, parse_check
from apps.enforcement.decisions.services import check_batch_evaluate, check_evaluate
from apps.enforcement.fallback import heartbeat
from apps.limits.snapshot_holder import snapshot_current

JSON = OrjsonRenderer.media_type
# A body past DATA_UPLOAD_MAX_MEMORY_SIZE is refused (413); up to this much of it is read and dropped first.
DRAIN_MAX_BYTES = 16 * 1024 * 1024
DRAIN_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class DoorRequest:
    """What the core reads of a request. `meta` is its WSGI environ (a Django request's META is one): the client
    address for the bad-key guard. `body` is empty when `content_length` is over the size limit (never read)."""

    path: str
    authorization: str
    content_type: str
    content_length: int
    body: bytes
    meta: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]  # Content-Type first
    body: bytes


def door_request(path: str, meta: Mapping[str, Any], read: Callable[[int], bytes]) -> DoorRequest:
    """A DoorRequest from a WSGI environ (or META) and a way to read `n` bytes of the body, which is asked only
    for a body within the size limit (Django's rule: a Content-Length past it is refused unread)."""
    try:
        length = int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0  # as Django and DRF read a Content-Length that is not a number
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    body = read(length) if length > 0 and (limit is None or length <= limit) else b""
    return DoorRequest(
        path=path,
        authorization=meta.get("HTTP_AUTHORIZATION", ""),
        content_type=meta.get("CONTENT_TYPE", meta.get("HTTP_CONTENT_TYPE", "")),
        content_length=length,
        body=body,
        meta=meta,
    )


def refused_body_drain(request: DoorRequest, read: Callable[[int], bytes]) -> None:
    """Read and drop the body of `request` when it is past the size limit (left unread, so answered 413): a client
    still sending it then reads its answer, where a server that closes with the body unread resets the connection
    under it (a broken pipe, not the answer). For a door that reads the WSGI stream itself (the lean door): Django
    reads its own."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is None or request.content_length <= limit:
        return
    length = min(request.content_length, DRAIN_MAX_BYTES)
    while length > 0:
        chunk = read(min(length, DRAIN_CHUNK_BYTES))
        if not chunk:
            return
        length -= len(chunk)


def check_answer(request: DoorRequest) -> Answer:
    started = time.perf_counter()
    try:
        principal = _principal(request)
        item = parse_check(_data(request))
        snapshot = snapshot_current()
        outcome = check_evaluate(principal=principal, item=item, snapshot=snapshot)
    except Exception as error:  # every failure is answered in the one error shape, as DRF's handler did
        return error_answer(error, request.path)
    observe("check", started, [(item.operation, outcome)], snapshot)
    return _answer(STATUS_BY_CODE[outcome.code], outcome_body(outcome), outcome_headers(outcome))


def batch_answer(request: DoorRequest) -> Answer:
    started = time.perf_counter()
    try:
        principal = _principal(request)
        try:
            items, mode = parse_batch(_data(request))
        except BatchTooLarge as error:
            raise PayloadTooLarge(str(error), code="batch_too_large") from None
        snapshot = snapshot_current()
        outcomes = check_batch_evaluate(principal=principal, items=items, mode=mode, snapshot=snapshot)
    except Exception as error:
        return error_answer(error, request.path)
    observe("batch", started, [(item.operation, o) for item, o in zip(items, outcomes, strict=True)], snapshot)
    allowed = sum(outcome.allowed for outcome in outcomes)
    body = {
        "allowed_count": allowed,
        "denied_count": len(outcomes) - allowed,
        "results": [outcome_body(outcome) for outcome in outcomes],
    }
    return _answer(200, body, {})


def _principal(request: DoorRequest) -> ApiPrincipal:
    """The caller, as DRF's authentication and IsAuthenticated found it (the process counts in the instances'
    heartbeats from its first request on, as every enforcement endpoint's)."""
    heartbeat.heartbeat_start()
    principal = principal_of_header(request.authorization, request.meta)
    if principal is None:
        raise exceptions.NotAuthenticated()
    return principal


def _data(request: DoorRequest) -> Any:
    """The body as DRF's request.data read it for these endpoints (OrjsonParser, JsonOnlyNegotiation)."""
    if request.content_length == 0:
        return {}  # DRF reads no body without a Content-Length, whatever the Content-Type
    if not is_json_media_type(request.content_type):
        raise exceptions.UnsupportedMediaType(request.content_type)
    body_size_check(request.content_length)
    return json_of_body(request.body)


@dataclass(frozen=True, slots=True)
class _ErrorContext:
    """What the exception handler reads of the request it answers: the path, in its log line of a 500."""

    path: str


def error_answer(error: Exception, path: str) -> Answer:
    """`error` in the one error shape, by the API's exception handler, with DRF's headers (WWW-Authenticate on a
    401, Retry-After on a 429). Call it from an `except` block: a bug is logged with its traceback there."""
    if isinstance(error, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        error.auth_header = AUTHENTICATE_HEADER  # type: ignore[union-attr]  # as APIView.handle_exception sets it
    response = error_response_handler(error, {"request": _ErrorContext(path)})
    if response is None:  # the handler answers every exception; this keeps mypy and a future change honest
        raise error
    headers = {"Content-Type": JSON}
    headers.update((name, value) for name, value in response.items() if name != "Content-Type")
    return Answer(response.status_code, headers, orjson.dumps(response.data))


def _answer(status: int, body: dict[str, Any], headers: dict[str, str]) -> Answer:
    return Answer(status, {"Content-Type": JSON, **headers}, orjson.dumps(body))
