"""Usage rows the database refuses on their own, kept in QuarantinedUsage (models.py) instead of blocking the rest.

The flush and the ledger of decisions made without Redis sift a refused batch (apps/common/quarantine.py),
write the good rows and store the refused ones here, in the same transaction: a minute is then claimed with
every row of it either added or quarantined, exactly once. After the commit the writer logs and counts them
(`rows_quarantined`).
"""

from __future__ import annotations

from collections.abc import Sequence

from apps.usage.models import QuarantinedUsage

# customer, operation, minute (epoch_ms // 60000)
UsageKey = tuple[str, str, int]


def usage_quarantine_add(*, writer: str, rows: Sequence[tuple[UsageKey, object, str]]) -> int:
    """Store each (key, row, why it was refused) inside the caller's transaction; how many.

    The key and the row are stored as repr() text, which any text column can hold, NUL bytes and all.
    """
    QuarantinedUsage.objects.bulk_create(
        QuarantinedUsage(writer=writer, minute=key[2], key=repr(key), row=repr(row), error=reason)
        for key, row, reason in rows
    )
    return len(rows)
