"""The moments commands take: an ISO 8601 date or date and time; without a zone, UTC."""

from __future__ import annotations

import datetime as dt


def moment_parse(text: str) -> dt.datetime:
    """`2025-03-01`, `2025-03-01T12:30`, `2025-03-01 12:30:00+02:00`, `...Z` as an aware datetime (UTC when no
    zone is given); ValueError names what it could not read."""
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a date or time: write 2025-03-01 or 2025-03-01T12:30 (UTC)") from None
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)
