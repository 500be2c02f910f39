"""ResponsiveBackoff: exponential back-off that also comes back down (the AutoSleeper of the client back-off seed,
sakthipriyan/go-utils `sleeper.go`).

Two variants with the same settings:

- `"auto_sleeper"` (the default): the seed's AutoSleeper, step for step. The interval is kept in whole
  nanoseconds as Go's `time.Duration` is (each change truncated), so the delays and metrics are the seed's to the
  nanosecond: tests/clients/test_auto_sleeper.py replays random sequences against a literal port of the Go code.
  A throttle does not reset the count of successes (it counts on towards the next step down); the step that
  drops the interval to zero still counts as a sleep (of zero length) in the metrics; a randomized step up is not
  held above `initial_s`, nor a randomized step down below `max_s` (with randomization, a step down at the cap may
  land above it, by at most `down` × (1 + `randomization`)).
- `"classic"`: this SDK's policy before it followed the seed exactly. A throttle starts the count of successes
  over; a zero-length pause is not counted as a sleep; every new interval is held within [`initial_s`, `max_s`]
  (or zero); intervals are plain floats.
"""

from __future__ import annotations

from typing import Literal, Unpack

from quota_client.backoff import Backoff, BackoffOptions, _non_negative

Variant = Literal["auto_sleeper", "classic"]
VARIANTS: tuple[Variant, ...] = ("auto_sleeper", "classic")
NS_PER_S = 1_000_000_000


class ResponsiveBackoff(Backoff):
    """Exponential back-off that also comes back down.

    A throttle multiplies the interval by `up` (starting from `initial_s`, capped at `max_s`); after
    `down_after` successes it is multiplied by `down`, and once that falls below `initial_s` it drops to zero: no
    waiting at all until the next throttle. While the interval is above zero, a success still waits it out (that
    pacing is what keeps a steady producer just under the limit). Each change is randomized by ± `randomization` ×
    the new interval, that spread capped at `max_randomization_s`. `variant` picks the seed's exact AutoSleeper
    (default) or the SDK's earlier `"classic"` rules (module docstring). `current_s` is the interval now.
    """

    def __init__(
        self,
        initial_s: float = 0.5,
        max_s: float = 900.0,
        *,
        up: float = 1.5,
        down: float = 0.9,
        down_after: int = 10,
        randomization: float = 0.3,
        max_randomization_s: float = 120.0,
        variant: Variant = "auto_sleeper",
        **options: Unpack[BackoffOptions],
    ) -> None:
        super().__init__(**options)
        if not initial_s * NS_PER_S >= 1 or max_s < initial_s:
            raise ValueError(f"need 1 ns <= initial_s <= max_s, not initial_s={initial_s!r}, max_s={max_s!r}.")
        if up < 1 or not 0 < down < 1:
            raise ValueError(f"need up >= 1 and 0 < down < 1, not up={up!r}, down={down!r}.")
        if down_after < 1:
            raise ValueError(f"down_after must be 1 or more, not {down_after!r}.")
        if not 0 <= randomization < 1:
            raise ValueError(f"randomization is a fraction from 0 to below 1, not {randomization!r}.")
        if variant not in VARIANTS:
            raise ValueError(f"variant is one of {', '.join(VARIANTS)}, not {variant!r}.")
        self.initial_s = float(initial_s)
        self.max_s = float(max_s)
        self.up = float(up)
        self.down = float(down)
        self.down_after = down_after
        self.randomization = float(randomization)
        self.max_randomization_s = _non_negative("max_randomization_s", max_randomization_s)
        self.variant: Variant = variant
        self._zero_sleep_counts = variant == "auto_sleeper"
        self.current_s = 0.0
        self.successes = 0  # towards the next step down
        # The auto_sleeper's state, in whole nanoseconds like the seed's time.Duration.
        self._interval_ns = 0
        self._initial_ns = round(initial_s * NS_PER_S)
        self._max_ns = round(max_s * NS_PER_S)
        self._max_randomization_ns = float(round(self.max_randomization_s * NS_PER_S))

    def _grow(self) -> float:
        self._count(up=1)
        if self.variant == "classic":
            return self._classic_grow()
        if self._interval_ns == 0:
            self._interval_ns = self._initial_ns
        else:
            grown = self._next_random(float(self._interval_ns) * self.up)
            self._interval_ns = self._max_ns if grown > float(self._max_ns) else int(grown)
        self.current_s = self._interval_ns / NS_PER_S
        return self.current_s

    def _settle(self) -> float | None:
        if self.variant == "classic":
            return self._classic_settle()
        if self._interval_ns == 0:
            return None  # the seed returns before sleep(): nothing slept, nothing counted
        self.successes += 1
        if self.successes == self.down_after:
            self._count(down=1)
            shrunk = self._next_random(float(self._interval_ns) * self.down)
            self._interval_ns = 0 if shrunk < float(self._initial_ns) else int(shrunk)
            self.current_s = self._interval_ns / NS_PER_S
            self.successes = 0
        return self.current_s  # may be 0 right after the step down: still a sleep, as in the seed

    def _next_random(self, interval: float) -> float:
        """The seed's getNextRandomInterval, operation for operation."""
        if self.randomization == 0:
            return interval
        delta = self.randomization * interval
        if delta > self._max_randomization_ns:
            delta = self._max_randomization_ns
        spread = 2 * delta * self.random()
        low = interval - delta
        return low + spread

    # -- the classic variant -----------------------------------------------------------------------------------
    def _classic_randomized(self, interval: float) -> float:
        spread = min(self.randomization * interval, self.max_randomization_s)
        return interval - spread + 2 * spread * self.random()

    def _classic_grow(self) -> float:
        self.successes = 0
        if self.current_s == 0:
            self.current_s = self.initial_s
        else:
            grown = self._classic_randomized(self.current_s * self.up)
            self.current_s = min(max(grown, self.initial_s), self.max_s)
        return self.current_s

    def _classic_settle(self) -> float:
        if self.current_s == 0:
            return 0.0
        self.successes += 1
        if self.successes >= self.down_after:
            self.successes = 0
            self._count(down=1)
            shrunk = self._classic_randomized(self.current_s * self.down)
            self.current_s = 0.0 if shrunk < self.initial_s else min(shrunk, self.max_s)
        return self.current_s

    def _restart(self) -> None:
        """Nothing: the learned interval outlives one loop."""

    def fresh(self) -> ResponsiveBackoff:
        return self
