"""Logging filters named in settings.LOGGING."""

from __future__ import annotations

import logging


class ClientErrorsAtDebug(logging.Filter):
    """Django logs every 4xx answer as a warning. A 429 or a 400 is normal traffic for a rate limiter
    (it is counted in the metrics), not something an operator must act on: such records are passed on
    at DEBUG, so they show only with LOG_LEVEL=DEBUG. 5xx answers keep their level."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if record.name != "django.request" or status is None or status >= 500:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)
