"""A hybrid limit as the platform described it to a local limiter (local_core.py), and the windows its counter
counts in: epoch-aligned periods, or the calendar windows the platform named."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LimitInfo:
    """A hybrid limit as the platform described it (one entry of the answer's `limits`)."""

    name: str
    algorithm: str
    quantity: int
    unit: str
    sync_ms: int
    variant: str
    shadow: bool
    windows: tuple[tuple[int, int], ...]  # the current window and the next

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> LimitInfo:
        start, end, following = int(entry["window_start"]), int(entry["window_end"]), int(entry["next_window_end"])
        return cls(
            str(entry["limit"]),
            str(entry["algorithm"]),
            int(entry["quantity"]),
            str(entry["unit"]),
            int(entry["sync_ms"]),
            str(entry["variant"]),
            bool(entry["shadow"]),
            ((start, end), (end, following)),
        )

    @property
    def shape(self) -> tuple[Any, ...]:
        """What a counter is built from: a change makes a new counter (its counts start over)."""
        length = 0 if self.algorithm == "calendar" else self.windows[0][1] - self.windows[0][0]
        return self.algorithm, self.quantity, self.unit, self.sync_ms, self.variant, length


class Windows:
    """A counter's windows: epoch-aligned periods, or the calendar windows the platform named (the next one
    guessed from the last length until an answer names it). Remembers the counter's window and the one before,
    as the counter worked them out: what an exchange reports for it."""

    def __init__(self, info: LimitInfo) -> None:
        self.info = info
        self.current = (-1, -1)
        self.prev_start = -1

    def __call__(self, now: int) -> tuple[int, int]:
        window = self._window(now)
        start, end = window
        self.prev_start = self.current[0] if start == self.current[1] else start - (end - start)
        self.current = window
        return window

    def _window(self, now: int) -> tuple[int, int]:
        known = self.info.windows
        if self.info.algorithm != "calendar":
            period = known[0][1] - known[0][0]
            return now - now % period, now - now % period + period
        for start, end in known:
            if start <= now < end:
                return start, end
        start, end = known[-1]
        steps = (now - start) // (end - start)
        return start + steps * (end - start), end + steps * (end - start)
