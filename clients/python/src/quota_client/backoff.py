"""Back-off policies: how long to wait after a throttle (and, for the responsive one, after a success).

Every policy hands out delays in seconds and keeps metrics of what it handed out; the caller sleeps them
(`sleep_on_throttle` / `sleep_on_success` do it with the policy's injectable `sleep`). All of them:

- take `jitter` (0..1): a delay d becomes uniform in [d × (1 − jitter), d], so a crowd of clients spreads out
  but never waits longer than the policy says;
- take `max_retries` (None = no limit): `retry_delay` answers None once that many throttles came in a row;
- honour the platform's `Retry-After` / `retry_after_ms` as a floor: no delay is shorter than the wait the
  platform advertised (a floor beats the cap: retrying earlier would only be refused again).

`fresh()` gives the state one retry loop should use: a new copy for the memoryless linear and exponential
policies, the same object for the responsive one (quota_client.responsive), whose whole point is to carry the
pace it learned from one call to the next (share one responsive policy among the workers that hit the same limit).
"""

from __future__ import annotations

import copy
import random as _random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict, Unpack


@dataclass
class BackoffMetrics:
    """What a policy did: reports received, interval changes, and the delays it handed out.

    `total_sleep_ns` is `total_sleep_s` summed in whole nanoseconds (each delay rounded), as the seed's
    AutoSleeper keeps its TotalSleepTime: exact where a float sum drifts.
    """

    invocations: int = 0
    times_up: int = 0
    times_down: int = 0
    sleeps: int = 0
    total_sleep_s: float = 0.0
    total_sleep_ns: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def snapshot(self) -> BackoffMetrics:
        with self._lock:
            return BackoffMetrics(
                self.invocations, self.times_up, self.times_down, self.sleeps, self.total_sleep_s, self.total_sleep_ns
            )


class BackoffOptions(TypedDict, total=False):
    """The options every policy takes (see the module docstring)."""

    jitter: float
    max_retries: int | None
    sleep: Callable[[float], object]
    random: Callable[[], float]


def _non_negative(name: str, value: float) -> float:
    if value < 0:
        raise ValueError(f"{name} must be zero or more, not {value!r}.")
    return float(value)


class Backoff(ABC):
    """The shared machinery: jitter, floor, retry limit, metrics, thread safety."""

    # Whether a delay of zero still counts in `metrics.sleeps` (the seed's AutoSleeper counts every sleep() call).
    _zero_sleep_counts = False

    def __init__(
        self,
        *,
        jitter: float = 0.0,
        max_retries: int | None = None,
        sleep: Callable[[float], object] = time.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        if not 0.0 <= jitter <= 1.0:
            raise ValueError(f"jitter is a fraction from 0 to 1, not {jitter!r}.")
        if max_retries is not None and max_retries < 0:
            raise ValueError(f"max_retries must be zero or more (or None for no limit), not {max_retries!r}.")
        self.jitter = jitter
        self.max_retries = max_retries
        self.sleep = sleep
        self.random = random
        self.metrics = BackoffMetrics()
        self.retries = 0  # throttles in a row since the last success
        self._lock = threading.RLock()

    # -- what subclasses define ------------------------------------------------------------------------------
    @abstractmethod
    def _grow(self) -> float:
        """Advance the state after a throttle; the delay before jitter and floor."""

    @abstractmethod
    def _settle(self) -> float | None:
        """Advance the state after a success; the delay before jitter (0 for memoryless policies), or None for
        no sleep at all (not even one of zero length)."""

    @abstractmethod
    def _restart(self) -> None:
        """Forget the interval (a new retry loop of a memoryless policy)."""

    # -- the public surface ------------------------------------------------------------------------------------
    @property
    def exhausted(self) -> bool:
        return self.max_retries is not None and self.retries >= self.max_retries

    def on_throttle(self, retry_after_s: float | None = None) -> float:
        """Record a throttle; the delay before the next attempt (at least `retry_after_s`). No retry limit."""
        with self._lock:
            self.retries += 1
            delay = self._grow()
            return self._hand_out(delay, retry_after_s)

    def on_success(self) -> float:
        """Record a success; the delay before the next call (0 except for the responsive policy)."""
        with self._lock:
            self.retries = 0
            return self._hand_out(self._settle(), None)

    def retry_delay(self, retry_after_s: float | None = None) -> float | None:
        """For retry loops: like on_throttle, or None (and a clean slate) once max_retries throttles came in a row."""
        with self._lock:
            if self.exhausted:
                with self.metrics._lock:
                    self.metrics.invocations += 1
                self.retries = 0
                self._restart()
                return None
            return self.on_throttle(retry_after_s)

    def sleep_on_throttle(self, retry_after_s: float | None = None) -> bool:
        """retry_delay, slept; False (without sleeping) when the retry limit is reached."""
        delay = self.retry_delay(retry_after_s)
        if delay is None:
            return False
        if delay > 0:
            self.sleep(delay)
        return True

    def sleep_on_success(self) -> None:
        delay = self.on_success()
        if delay > 0:
            self.sleep(delay)

    def fresh(self) -> Backoff:
        """The state for one retry loop: a clean copy (sharing metrics, sleep and random)."""
        with self._lock:
            clone = copy.copy(self)
        clone._lock = threading.RLock()
        clone.retries = 0
        clone._restart()
        return clone

    # -- helpers -----------------------------------------------------------------------------------------------
    def _hand_out(self, delay: float | None, floor_s: float | None) -> float:
        slept = delay is not None
        delay = delay or 0.0
        if delay > 0 and self.jitter:
            delay *= 1.0 - self.jitter * self.random()
        if floor_s is not None and floor_s > delay:
            delay = float(floor_s)
        with self.metrics._lock:
            self.metrics.invocations += 1
            if slept and (delay > 0 or self._zero_sleep_counts):
                self.metrics.sleeps += 1
                self.metrics.total_sleep_s += delay
                self.metrics.total_sleep_ns += round(delay * 1e9)
        return delay

    def _count(self, *, up: int = 0, down: int = 0) -> None:
        with self.metrics._lock:
            self.metrics.times_up += up
            self.metrics.times_down += down


class LinearBackoff(Backoff):
    """base, base + step, base + 2·step, … capped at max_s; a success starts over."""

    def __init__(
        self, base_s: float = 1.0, step_s: float = 1.0, max_s: float = 30.0, **options: Unpack[BackoffOptions]
    ) -> None:
        super().__init__(**options)
        self.base_s = _non_negative("base_s", base_s)
        self.step_s = _non_negative("step_s", step_s)
        self.max_s = _non_negative("max_s", max_s)
        self.current_s = 0.0

    def _grow(self) -> float:
        self._count(up=1)
        self.current_s = min(self.base_s if self.current_s == 0 else self.current_s + self.step_s, self.max_s)
        return self.current_s

    def _settle(self) -> float:
        self._restart()
        return 0.0

    def _restart(self) -> None:
        self.current_s = 0.0


class ExponentialBackoff(Backoff):
    """initial, initial × multiplier, initial × multiplier², … capped at max_s; a success starts over."""

    def __init__(
        self, initial_s: float = 0.1, multiplier: float = 2.0, max_s: float = 30.0, **options: Unpack[BackoffOptions]
    ) -> None:
        super().__init__(**options)
        if multiplier < 1:
            raise ValueError(f"multiplier must be 1 or more, not {multiplier!r}.")
        self.initial_s = _non_negative("initial_s", initial_s)
        self.multiplier = float(multiplier)
        self.max_s = _non_negative("max_s", max_s)
        self.current_s = 0.0

    def _grow(self) -> float:
        self._count(up=1)
        grown = self.initial_s if self.current_s == 0 else self.current_s * self.multiplier
        self.current_s = min(grown, self.max_s)
        return self.current_s

    def _settle(self) -> float:
        self._restart()
        return 0.0

    def _restart(self) -> None:
        self.current_s = 0.0
