"""Bookkeeping that must stay off the hot path: remember in memory, write in the background.

The hot path calls `record(key, value)` (a dict assignment); a daemon thread calls `flush` every
`interval_s` seconds with what piled up. Interval 0 starts no thread (tests flush by hand).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)


class BackgroundRecorder:
    def __init__(self, name: str, write: Callable[[dict[str, Any]], Any], interval_s: Callable[[], float]) -> None:
        self._name = name
        self._write = write
        self._interval_s = interval_s
        self._pending: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def record(self, key: str, value: Any) -> None:
        self._pending[key] = value
        if self._thread is None and self._interval_s() > 0:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()

    def flush(self) -> Any:
        with self._lock:
            pending, self._pending = self._pending, {}
        return self._write(pending) if pending else None

    def _run(self) -> None:
        from django.db import close_old_connections

        while True:
            time.sleep(self._interval_s())
            try:
                self.flush()
            except Exception:  # bookkeeping only: never let it take the thread down
                logger.exception("Background write %s failed; will try again", self._name)
            finally:
                close_old_connections()
