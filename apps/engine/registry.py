"""ALGORITHMS: every algorithm's name -> its reference model, its Lua fragment(s) and its key code.

store/redis.py builds the check script from it: lib.lua, CODES (the algorithm numbers of check.lua's
arguments), one `define(code)` with a branch per algorithm running its fragments (on first use), then
check.lua.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from apps.engine.keys import ALGORITHM_CODES
from apps.engine.reference import (
    calendar,
    concurrency,
    fixed_window,
    leaky_bucket,
    session_time,
    sliding_log,
    sliding_window,
    token_bucket,
)
from apps.engine.reference.base import Params


class Model(Protocol):
    """The functions of a reference model module (see apps/engine/reference/__init__.py)."""

    def evaluate(self, state: Any, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
        """(admits, retry_after_ms or None when the cost can never pass) for `cost` (>= 1) at `now`."""
        ...

    def consume(self, state: Any, params: Params, now: int, cost: int, lease: Any = None) -> Any:
        """The state after spending `cost` at `now` (concurrency: holding `lease`)."""
        ...

    def report(self, state: Any, params: Params, now: int) -> tuple[int, int]:
        """(remaining units, milliseconds until full) at `now`."""
        ...

    def expires_at(self, state: Any, params: Params, now: int) -> int:
        """Epoch ms after which `state` means the same as no state at all."""
        ...


@dataclass(frozen=True, slots=True)
class Algorithm:
    """One algorithm's three faces: the name operators use, the Python model and the Lua fragment."""

    name: str
    code: str
    model: Model
    fragments: tuple[str, ...]


def _algorithm(name: str, model: Model, *fragments: str) -> Algorithm:
    return Algorithm(name=name, code=ALGORITHM_CODES[name], model=model, fragments=fragments)


ALGORITHMS: dict[str, Algorithm] = {
    algorithm.name: algorithm
    for algorithm in (
        _algorithm("fixed_window", fixed_window, "fixed_window.lua"),
        _algorithm("calendar", calendar, "calendar.lua"),
        _algorithm("sliding_window", sliding_window, "sliding_window.lua"),
        _algorithm("sliding_log", sliding_log, "sliding_log.lua"),
        _algorithm("token_bucket", token_bucket, "meter.lua", "token_bucket.lua"),
        _algorithm("leaky_bucket", leaky_bucket, "meter.lua", "leaky_bucket.lua"),
        _algorithm("concurrency", concurrency, "concurrency.lua"),
        _algorithm("session_time", session_time, "session_time.lua"),
    )
}
