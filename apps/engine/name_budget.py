"""How many new names (customers, operations) one caller may bring in per UTC day.

Every name a service invents becomes a row somewhere (a customer, usage rows per minute), so the
platform admits at most `per_day` new names per service and day; past that, the caller counts them
under one shared name. A name admitted once stays admitted for the rest of its day.

RedisNameBudget keeps the day's admitted names in one set per service (name_admit.lua: check, count
and add in one atomic call), shared by every API process; MemoryNameBudget is the in-process twin for
the embedded store and for when Redis is unreachable (then each process counts on its own).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import resources
from typing import Protocol

from apps.engine.clock import Clock, SystemClock
from apps.engine.deadline import DeadlineScript
from apps.engine.keys import enc

DAY_MS = 86_400_000
# The set outlives its day a little, so a clock slightly behind Redis's does not start a day twice.
SET_TTL_MS = DAY_MS + 3_600_000
NAME_ADMIT_SCRIPT = (resources.files("apps.engine") / "lua" / "name_admit.lua").read_text(encoding="utf-8")


class NameBudget(Protocol):
    def admit(self, service: str, names: Sequence[str], per_day: int) -> list[bool]:
        """For each of `names` ("<kind>:<name>"), in order: may `service` bring it in today (admitted
        before, or within the budget)? A name repeated in `names` is admitted once."""
        ...


class RedisNameBudget:
    def __init__(self, client: object, *, key_prefix: str, clock: Clock | None = None) -> None:
        self._script = DeadlineScript(client, NAME_ADMIT_SCRIPT)
        self._prefix = key_prefix
        self._clock = clock or SystemClock()

    def admit(self, service: str, names: Sequence[str], per_day: int) -> list[bool]:
        if not names:
            return []
        day = self._clock.now_ms() // DAY_MS
        key = f"{self._prefix}:n:{{s={enc(service)}}}:{day}"
        return [bool(answer) for answer in self._script(keys=[key], args=[per_day, SET_TTL_MS, *names])]


class MemoryNameBudget:
    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._day = -1
        self._admitted: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def admit(self, service: str, names: Sequence[str], per_day: int) -> list[bool]:
        day = self._clock.now_ms() // DAY_MS
        with self._lock:
            if day != self._day:
                self._day, self._admitted = day, {}
            admitted = self._admitted.setdefault(service, set())
            return [self._one(admitted, name, per_day) for name in names]

    @staticmethod
    def _one(admitted: set[str], name: str, per_day: int) -> bool:
        if name in admitted:
            return True
        if len(admitted) >= per_day:
            return False
        admitted.add(name)
        return True
