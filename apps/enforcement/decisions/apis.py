"""The service API for decisions, through DRF: routing, the OpenAPI schema and docs. The work is the decision
core's (core.py), which the lean WSGI route (quota_platform/lean_door.py) calls the same way."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request

from apps.api.views import RENDERER
from apps.enforcement.api_base import EnforcementApi
from apps.enforcement.decisions import schema_docs as decision_docs
from apps.enforcement.decisions import serializers
from apps.enforcement.decisions.core import Answer, DoorRequest, batch_answer, check_answer, door_request


class DecisionApi(EnforcementApi):
    """An endpoint whose authentication, body parsing and errors are the core's: DRF only routes to it. The
    authentication and permission classes stay declared for the schema (its security scheme)."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # DRF's initial() would authenticate (a second time: the core does, and counts a bad key once) and parse.
        self.format_kwarg = None
        request.accepted_renderer, request.accepted_media_type = RENDERER, RENDERER.media_type


def request_of(request: Request) -> DoorRequest:
    """The core's request from DRF's: its META and body (read only when within the size limit)."""
    return door_request(request.path, request.META, lambda _length: request.body)


def http_response(answer: Answer) -> HttpResponse:
    return HttpResponse(answer.body, status=answer.status, headers=answer.headers)


class CheckApi(DecisionApi):
    @extend_schema(request=serializers.CheckInputSerializer, **decision_docs.CHECK)
    def post(self, request: Request) -> HttpResponse:
        return http_response(check_answer(request_of(request)))


class CheckBatchApi(DecisionApi):
    @extend_schema(request=serializers.BatchInputSerializer, **decision_docs.BATCH)
    def post(self, request: Request) -> HttpResponse:
        return http_response(batch_answer(request_of(request)))
