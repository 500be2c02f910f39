"""The toggles API for services: read feature toggles, revalidating with ETag / If-None-Match. Thin: the
bodies and their ETags come rendered from apps.toggles.selectors (in memory, per config snapshot)."""

from __future__ import annotations

import re

from django.http import HttpResponse, HttpResponseNotModified
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request

from apps.api.authentication import request_principal
from apps.api.fields import INVALID_MESSAGE, parse_path_text
from apps.api.views import ServiceApi
from apps.common.exceptions import InvalidInput
from apps.limits.snapshot_holder import snapshot_current
from apps.toggles import schema_docs as toggle_docs
from apps.toggles import serializers
from apps.toggles.selectors import Rendered, toggle_visible, toggles_visible

MAX_TOGGLE_NAME_LENGTH = 100
# An entity tag in If-None-Match, weak or strong (RFC 9110 §8.8.3); commas may occur inside the quotes.
ENTITY_TAG = re.compile(r'(?:W/)?("[\x21\x23-\x7e\x80-\xff]*")')
# The answer depends on the key, so shared caches must not keep it, and a client revalidates each time it reads.
CACHING_HEADERS = {"Cache-Control": "private, no-cache", "Vary": "Authorization"}

LIST_DESCRIPTION = (
    "Every feature toggle this API key may read, sorted by name: toggles with no customer are read by every key; "
    "a toggle scoped to a customer only by keys bound to that customer and by service-wide keys. The answer "
    "carries an `ETag` of the toggles (weak: `version`, the configuration's, may move without them); send it "
    "back in `If-None-Match` and, while no toggle changed, the answer is `304 Not Modified` with no body. "
    "Answered from the platform's in-memory configuration: an edit in the admin shows within about a second."
)
ONE_DESCRIPTION = (
    "One feature toggle by name, with its own `ETag` (a change to another toggle leaves it alone). `404` with "
    "code `unknown_toggle` when there is no toggle of that name for this key (another customer's toggle "
    "included)."
)


def if_none_match(header: str, etag: str) -> bool:
    """Whether an If-None-Match header matches `etag` (weak comparison, as RFC 9110 asks for this header)."""
    if header.strip() == "*":
        return True
    return etag.removeprefix("W/") in ENTITY_TAG.findall(header)


def conditional_answer(request: Request, rendered: Rendered) -> HttpResponse:
    headers = {"ETag": rendered.etag, **CACHING_HEADERS}
    if if_none_match(request.META.get("HTTP_IF_NONE_MATCH", ""), rendered.etag):
        response: HttpResponse = HttpResponseNotModified(headers=headers)
        return response
    return HttpResponse(rendered.body, content_type="application/json", headers=headers)


def refuse_query_parameters(request: Request) -> None:
    if request.query_params:
        fields = {name: ["Unknown query parameter."] for name in sorted(request.query_params)}
        raise InvalidInput(INVALID_MESSAGE, fields=fields)


class ToggleListApi(ServiceApi):
    @extend_schema(
        parameters=[serializers.IF_NONE_MATCH, serializers.ETAG],
        responses=toggle_docs.LIST_RESPONSES,
        examples=toggle_docs.LIST_EXAMPLES,
        operation_id="toggles_list",
        summary="Feature toggles this API key may read",
        description=LIST_DESCRIPTION,
    )
    def get(self, request: Request) -> HttpResponse:
        refuse_query_parameters(request)
        rendered = toggles_visible(principal=request_principal(request), snapshot=snapshot_current())
        return conditional_answer(request, rendered)


class ToggleDetailApi(ServiceApi):
    @extend_schema(
        parameters=[serializers.TOGGLE_NAME_PATH, serializers.IF_NONE_MATCH, serializers.ETAG],
        responses=toggle_docs.ONE_RESPONSES,
        examples=toggle_docs.ONE_EXAMPLES,
        operation_id="toggles_retrieve",
        summary="One feature toggle by name",
        description=ONE_DESCRIPTION,
    )
    def get(self, request: Request, name: str) -> HttpResponse:
        refuse_query_parameters(request)
        parse_path_text("name", name, MAX_TOGGLE_NAME_LENGTH)
        rendered = toggle_visible(principal=request_principal(request), name=name, snapshot=snapshot_current())
        return conditional_answer(request, rendered)
