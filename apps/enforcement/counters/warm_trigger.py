"""A warm-up run asked for by a check that needed a seed (seeding.py): its epoch is cold, and the beat job may be
seconds away (warm_up.py runs it; apps/ops wires the Celery task that does)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

logger = logging.getLogger(__name__)

TRIGGER_EVERY_S = 10.0  # a process asks at most this often: the beat job runs every few seconds anyway
_trigger: Callable[[list[str]], None] | None = None
_last_asked = [float("-inf")]


def warm_up_trigger_set(trigger: Callable[[list[str]], None] | None) -> None:
    """How a run is asked for (apps/ops wires its Celery task here: enforcement does not import ops)."""
    global _trigger
    _trigger = trigger


def warm_up_wanted(counters: Sequence[str]) -> None:
    """A check asked seeds for `counters`: its epoch is cold. Ask for a run, at most every TRIGGER_EVERY_S per process;
    never raises (the check goes on with its own seeds either way)."""
    now = time.monotonic()
    if _trigger is None or now - _last_asked[0] < TRIGGER_EVERY_S:
        return
    _last_asked[0] = now
    try:
        _trigger(list(counters[:20]))
    except Exception as error:  # a broker away must not fail the check
        logger.warning("Could not ask for a counter warm-up: %s", error)
