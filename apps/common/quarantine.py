"""Writing a batch when one of its rows may be unwritable on its own: set that row aside, write the others.

A row is unwritable when the database refuses its values whatever else happens: PostgreSQL text cannot
hold a NUL byte (psycopg refuses it before sending), jsonb refuses the escape of one, a name can be too long
for its column, a string can hold a lone surrogate that no encoding accepts. Retrying such a row never
helps, and written in one statement with the others it takes them all down with it, round after round.

`rows_sift` finds those rows by bisection: it writes halves of the batch in savepoints that are always
rolled back (probes write nothing), and a part that fails is split again until the failing rows stand
alone. Only UNWRITABLE errors count as a refusal; any other error (the database away, a deadlock, a
timeout) propagates, so a transient failure never quarantines a row: the caller retries as before. A
batch refused only as a whole (two rows that fail together but not alone) finds no row: the caller's
write of the "good" rows then fails again and propagates, as it did before.

A probe costs a statement per part: about 2·log2(n) probes per unwritable row among n, paid only after a
batch was refused. Writers that sift call `rows_quarantined` once their transaction is in, to log each row
set aside (its key in repr(), so a NUL or a newline shows as an escape and cannot forge log lines) and count
it in the quota_rows_quarantined_total metric.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from django.db import DataError, transaction

from apps.common.metrics import rows_quarantined_count

logger = logging.getLogger(__name__)

# What the database (or its driver, for NUL bytes and lone surrogates) raises for values it cannot store.
UNWRITABLE: tuple[type[Exception], ...] = (DataError, UnicodeError)

T = TypeVar("T")
# A key longer than this (in repr) is cut in logs and reports: the row itself is what is too long, sometimes.
SHOWN_CHARS = 200


@dataclass(frozen=True, slots=True)
class Sifted(Generic[T]):
    """A batch split into the rows a write accepts and those it refuses on their own, each with the reason."""

    good: list[T] = field(default_factory=list)
    bad: list[tuple[T, str]] = field(default_factory=list)


class _Probed(Exception):
    """Raised after a probe's write succeeded, to roll its savepoint back."""


def rows_sift(rows: Sequence[T], write: Callable[[Sequence[T]], object]) -> Sifted[T]:
    """Split `rows` by whether `write(part)` accepts them; nothing is written (see the module docstring).

    Call it inside the transaction that then writes the good rows, so both see the same database.
    """
    refused: dict[int, str] = {}
    _find_refused(rows, write, 0, len(rows), refused)
    good = [row for index, row in enumerate(rows) if index not in refused]
    return Sifted(good=good, bad=[(rows[index], reason) for index, reason in sorted(refused.items())])


def key_shown(key: object) -> str:
    """repr(key) for a log line or a report, cut to SHOWN_CHARS."""
    text = repr(key)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}… ({len(text)} chars)"


def rows_quarantined(*, writer: str, keys: Sequence[tuple[object, str]]) -> None:
    """Log and count rows `writer` set aside: (key, reason) each; the key is logged in repr() (key_shown)."""
    for key, reason in keys:
        logger.error("%s: quarantined a row the database refuses on its own: %s (%s)", writer, key_shown(key), reason)
    if keys:
        rows_quarantined_count(writer=writer, count=len(keys))


def _find_refused(
    rows: Sequence[T], write: Callable[[Sequence[T]], object], start: int, end: int, refused: dict[int, str]
) -> None:
    if start >= end:
        return
    reason = _probe(write, rows[start:end])
    if reason is None:
        return
    if end - start == 1:
        refused[start] = reason
        return
    middle = (start + end) // 2
    _find_refused(rows, write, start, middle, refused)
    _find_refused(rows, write, middle, end, refused)


def _probe(write: Callable[[Sequence[T]], object], part: Sequence[T]) -> str | None:
    """None if `write(part)` succeeds (rolled back all the same), else why the database refused it."""
    try:
        with transaction.atomic():
            write(part)
            raise _Probed
    except _Probed:
        return None
    except UNWRITABLE as error:
        return str(error).splitlines()[0] if str(error) else type(error).__name__
