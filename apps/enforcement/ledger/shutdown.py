"""The decision ledger's last round on a graceful exit: what it tallied reaches PostgreSQL before the process ends.

Four doors, each calling `ledger_final_flush` (the first one does the work; the next ones find nothing pending):
- gunicorn: its `worker_exit` hook (quota_platform/gunicorn_conf.py), run in the worker after its last request;
- Celery: `worker_process_shutdown` (a prefork child) and `worker_shutdown` (the main process): quota_platform/
  celery.py;
- SIGTERM in a process where nobody else handles it (SIG_DFL: a bare script, `manage.py` commands): flushed, then
  the signal is sent again with its default action, so the exit status stays the one SIGTERM gives;
- atexit, for every interpreter that ends normally.
After the last round the writer is deregistered (apps/usage/services/writers.py), so its silence is not taken for a
crash. A process killed outright (SIGKILL, the OOM killer) runs none of these: it loses at most one interval.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
from types import FrameType

logger = logging.getLogger(__name__)
_installed = False
_lock = threading.Lock()


def flush_on_exit() -> None:
    """Install the atexit and SIGTERM doors once per process (the ledger calls it when its thread starts)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    atexit.register(ledger_final_flush)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def ledger_final_flush() -> int:
    """Write what the ledger holds and deregister this writer; how many decisions were written. Never raises: it
    runs while the process ends, where an exception would hide the exit's real cause."""
    from apps.enforcement.ledger.pending import decision_ledger
    from apps.usage.services.writers import writer_stopped

    written = 0
    decision_ledger.closed = True  # no heartbeat from now on: a writer registered after this would never stop
    try:
        written = decision_ledger.flush()  # waits for a round in flight, then writes what came after it
        if decision_ledger.writer:
            writer_stopped(name=decision_ledger.writer)
            decision_ledger.writer = ""
    except Exception:
        logger.exception("Could not write the last decisions of this process: they are lost")
    return written


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    ledger_final_flush()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _forked() -> None:
    """In a child made by fork the doors are installed again when its ledger starts (pending.py resets the rest)."""
    global _installed
    _installed = False


os.register_at_fork(after_in_child=_forked)
