"""Bookkeeping that must stay off the hot path: remember in memory, write in the background.

The hot path calls `record(key, value)` (a dict assignment); a daemon thread calls `flush` every
`interval_s` seconds with what piled up. Interval 0 starts no thread (tests flush by hand).

A round is one database transaction. An entry the database refuses on its own (a NUL byte in a customer
id, a value too long: quarantine.py) is set aside, logged and counted, and the others are written; it is
not retried, since it would fail every round. Any other failure (the database away) drops the round, as
these writes are bookkeeping the hot path records again on the next use of the same key.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from django.db import transaction

from apps.common.quarantine import UNWRITABLE, rows_quarantined, rows_sift

logger = logging.getLogger(__name__)


class PeriodicThread(threading.Thread):
    """Calls `action` every `interval_s()` seconds in a daemon thread until `stop()`. A failing round is
    logged and the next one tries again; the thread's database connections are closed as Django expects."""

    def __init__(self, name: str, action: Callable[[], Any], interval_s: Callable[[], float]) -> None:
        super().__init__(name=name, daemon=True)
        self._action = action
        self._interval_s = interval_s
        self._stopped = threading.Event()

    def stop(self) -> None:
        self._stopped.set()
        self.join()

    def run(self) -> None:
        from django.db import close_old_connections, connections

        while not self._stopped.wait(self._interval_s()):
            try:
                self._action()
            except Exception:  # background work only: never let it take the thread down
                logger.exception("Background work %s failed; will try again", self.name)
            finally:
                close_old_connections()
        connections.close_all()


class BackgroundRecorder:
    """`write(entries)` writes a dict of entries to the database; writing an entry twice must change
    nothing (a round that sets an entry aside writes the others again)."""

    def __init__(self, name: str, write: Callable[[dict[str, Any]], Any], interval_s: Callable[[], float]) -> None:
        self._name = name
        self._write = write
        self._interval_s = interval_s
        self._pending: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._thread: PeriodicThread | None = None

    def record(self, key: str, value: Any) -> None:
        self._pending[key] = value
        if self._thread is None and self._interval_s() > 0:
            with self._lock:
                if self._thread is None:
                    self._thread = PeriodicThread(self._name, self.flush, self._interval_s)
                    self._thread.start()

    def flush(self) -> Any:
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return None
        try:
            with transaction.atomic():
                return self._write(pending)
        except UNWRITABLE:
            pass  # an entry is refused on its own: find it, write the others
        with transaction.atomic():
            sifted = rows_sift(list(pending.items()), lambda part: self._write(dict(part)))
            written = self._write(dict(sifted.good)) if sifted.good else None
        rows_quarantined(writer=self._name, keys=[(key, reason) for (key, _), reason in sifted.bad])
        return written
