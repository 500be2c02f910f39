"""Errors the services raise. The exception handler turns them into the one error shape."""

from typing import Any


class ApplicationError(Exception):
    """A failure a caller can understand: a machine `code`, a human `message`, optional `fields`."""

    code = "error"
    status_code = 400

    def __init__(self, message: str, *, fields: dict[str, Any] | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields or {}
        if code:
            self.code = code


class InvalidInput(ApplicationError):
    code = "invalid"
    status_code = 400


class NotFound(ApplicationError):
    code = "not_found"
    status_code = 404


class Forbidden(ApplicationError):
    code = "forbidden"
    status_code = 403


class PayloadTooLarge(ApplicationError):
    code = "payload_too_large"
    status_code = 413


class Unprocessable(ApplicationError):
    """Well-formed, but cannot be honoured as asked (e.g. a request id reused for a different request)."""

    code = "unprocessable"
    status_code = 422
