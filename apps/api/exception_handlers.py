"""The only place that builds the error body: {"error": {"code", "message", "fields"}}."""

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from apps.common.exceptions import ApplicationError

logger = logging.getLogger(__name__)

# DRF's own codes, renamed to the contract's vocabulary.
CODE_BY_DRF_CODE = {
    "not_authenticated": "unauthenticated",
    "authentication_failed": "unauthenticated",
    "permission_denied": "forbidden",
    "not_found": "not_found",
    "parse_error": "malformed_json",
    "unsupported_media_type": "unsupported_media_type",
    "method_not_allowed": "method_not_allowed",
    "throttled": "throttled",
}


def error_body(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def error_response_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        return Response(error_body(exc.code, exc.message, exc.fields), status=exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        return Response(error_body("payload_too_large", "The request body is too large."), status=413)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()

    response = exception_handler(exc, context)
    if response is None:
        # A bug, not bad input: log it whole, and still answer in the one error shape.
        logger.exception("Unexpected error while serving %s", context.get("request") and context["request"].path)
        return Response(
            error_body("internal_error", "Something went wrong on our side; it has been logged. Please retry."),
            status=500,
        )
    if isinstance(exc, exceptions.ValidationError):
        response.data = error_body("invalid", "The request is not valid; see fields.", _as_fields(exc.detail))
    elif isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        drf_code = codes if isinstance(codes, str) else "error"
        response.data = error_body(CODE_BY_DRF_CODE.get(drf_code, drf_code), str(exc.detail))
    return response


def _as_fields(detail: Any) -> dict[str, Any]:
    if isinstance(detail, dict):
        return {key: _plain(value) for key, value in detail.items()}
    return {"non_field_errors": _plain(detail)}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return str(value)
