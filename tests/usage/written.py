"""Waiting for the usage other processes tally: their decision ledgers write it every QUOTA_LEDGER_FLUSH_S."""

from __future__ import annotations

import time
from typing import Any

from django.db.models import Sum

from apps.usage.models import UsageMinute

ROUND_S = 2.0  # QUOTA_LEDGER_FLUSH_S of a live server (settings' default)


def usage_written(want: dict[str, int], timeout_s: float = 20.0, **filters: Any) -> dict[str, int | None]:
    """The sums of `want`'s counters over the UsageMinute rows of `filters`, once they reach `want` (or the timeout
    passed) and then stayed the same for two more rounds: a count written twice would show then."""
    deadline = time.monotonic() + timeout_s
    while True:
        usage = UsageMinute.objects.filter(**filters).aggregate(**{name: Sum(name) for name in want})
        if usage == want or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    time.sleep(2 * ROUND_S)
    return UsageMinute.objects.filter(**filters).aggregate(**{name: Sum(name) for name in want})
