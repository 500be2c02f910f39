"""The embedded default (`make run` without REDIS_URL): what it does without Redis, said in one place so the
dashboard, the quality page, `audit_quality` and the alert job tell the same story instead of a reassuring zero."""

from __future__ import annotations

from django.conf import settings

PRODUCTION_SETUP = "production setup: set REDIS_URL"
COUNTERS_IN_PROCESS = "counters are in-process (embedded default)"
DECISION_LOG_NEEDS_REDIS = (
    f"The decision log needs Redis ({PRODUCTION_SETUP}): the embedded default stores no decision log, so nothing "
    "was audited."
)
USAGE_ALERTS_NEED_REDIS = (
    f"Usage-share alerts need Redis ({PRODUCTION_SETUP}): the embedded default keeps the counters inside the API "
    "process, where the alert job cannot read them, so usage rules are not checked."
)


def counters_in_process() -> bool:
    """True with the embedded default: no Redis is configured, so each process counts on its own (the one API
    process's counters are the real ones) and no decision log reaches the database."""
    return not settings.COUNTERS_REDIS_URL
