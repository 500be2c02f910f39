"""What can go wrong, as one hierarchy: catch QuotaError for all of it, or one branch.

QuotaError
├── QuotaExceeded        over a limit (and not worth waiting, or the retries ran out)
├── AccessDenied         an access rule denies it, or the API key may not do it (401 / 403)
├── InvalidRequest       the platform refused the request itself (400 / 404 / 413 / 422): fix the call
├── PlatformUnavailable  no answer (network, timeout, 5xx), or the platform cannot decide (503)
└── LeaseLost            a held lease expired or was released behind the holder's back
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from quota_client.types import Decision


class QuotaError(Exception):
    """Base of every error the client raises. `code` is the platform's machine code when there is one."""

    def __init__(self, message: str, *, code: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


class QuotaExceeded(QuotaError):
    """Over a limit. `retry_after_s` says when it may pass (None: never at this cost)."""

    def __init__(self, decision: Decision, message: str = "") -> None:
        when = (
            "it cannot pass at this cost"
            if decision.retry_after_s is None
            else f"retry in {decision.retry_after_s:.3f} s"
        )
        over = ", ".join(limit.name for limit in decision.limits if limit.over and not limit.shadow)
        super().__init__(
            message or f"Over the limit{f' ({over})' if over else ''}: {when}.", code="OVER_LIMIT", status=429
        )
        self.decision = decision

    @property
    def retry_after_s(self) -> float | None:
        return self.decision.retry_after_s


class AccessDenied(QuotaError):
    """Denied by an access rule (`decision` set), or the key is not valid or not allowed (`decision` None)."""

    def __init__(
        self, message: str, *, code: str = "DENIED", status: int | None = 403, decision: Decision | None = None
    ) -> None:
        super().__init__(message, code=code, status=status)
        self.decision = decision


class InvalidRequest(QuotaError):
    """The platform refused the request as given; `fields` names what is wrong, field by field."""

    def __init__(
        self, message: str, *, code: str = "invalid", status: int | None = 400, fields: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, code=code, status=status)
        self.fields = fields or {}

    def __str__(self) -> str:
        return f"{self.message} {self.fields}" if self.fields else self.message


class PlatformUnavailable(QuotaError):
    """No usable answer: the platform could not be reached, timed out or failed, or it answered 503 because its
    counter store is down and the limit's own policy is `closed` (`code == "store_unavailable"`; that answer is
    the operator's choice, so fail-open clients raise it too)."""


class LeaseLost(QuotaError):
    """The lease ran out or was released elsewhere: the slot is no longer held."""
