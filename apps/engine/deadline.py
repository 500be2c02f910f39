"""Deadlines on script calls: a call whose caller stopped waiting is never applied afterwards.

A socket timeout ends the client's wait, not the command. A paused Redis (SIGSTOP, a long fork, a busy script)
reads the call when it resumes and used to run it then: a check answered 503 under `closed` still spent quota, and
a degraded admission was counted twice (by the ledger that answered it, and by the late script). So every script a
request sends carries its deadline as its last argument, in Redis's clock, and starts with lua/deadline.lua: past
the deadline it writes nothing and answers an error, which the caller takes as a timeout.

The deadline is the earliest moment the client may give up (its socket timeout after the deadline is taken, just
before sending) less a margin for the answer's way back, in Redis's clock: this host's clock plus the offset to
Redis's, measured with TIME (half a round trip of error) when a client is first used and again every
OFFSET_REFRESH_MS, so a host whose clock is off by minutes still sends deadlines Redis reads right. A client without
a socket timeout sends 0: no deadline. A call that waits long for a connection before it is sent (a burst opening
new ones) may reach Redis past its deadline and be refused where it would have just made it: it was as close to its
timeout as that.

refund.lua alone is sent without one: it only gives back what a reservation took, which is right however late.
"""

from __future__ import annotations

import threading
import weakref
from importlib import resources
from typing import Any

from redis.exceptions import ResponseError, TimeoutError

from apps.engine.clock import Clock, SystemClock

OFFSET_REFRESH_MS = 60_000
MIN_MARGIN_MS = 2
MARGIN_SHARE = 10  # a tenth of the timeout is kept for the answer's way back and the offset's error
ERROR_PREFIX = "DEADLINE"
FUNCTION_NOT_FOUND = "Function not found"  # FCALL's error when Redis lacks the library


def _prologue() -> str:
    """deadline.lua as one line (its comments dropped): put in front of a script's first line, it moves no line."""
    text = (resources.files("apps.engine") / "lua" / "deadline.lua").read_text(encoding="utf-8")
    return " ".join(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("--"))


DEADLINE_PROLOGUE = _prologue()


def with_deadline(script: str) -> str:
    """`script`, refusing to run past the deadline its caller appends to ARGV (see DeadlineScript)."""
    return f"{DEADLINE_PROLOGUE} {script}"


class DeadlinePassed(TimeoutError):
    """The script reached Redis after its caller's deadline and wrote nothing (a timeout, as far as callers go)."""


def raise_if_deadline(answer: Any) -> None:
    """Raise DeadlinePassed for a pipelined answer that is the prologue's refusal (pipelines return errors)."""
    if isinstance(answer, ResponseError) and str(answer).startswith(ERROR_PREFIX):
        raise DeadlinePassed(str(answer)) from answer


class Deadlines:
    """The deadlines of calls sent on one client: its socket timeout after now, less a margin, in Redis's clock.
    (The client is passed to each call, not kept: deadlines_of keys them by a weak reference to it.)"""

    def __init__(self, timeout_s: float | None, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self.budget_ms = round(timeout_s * 1000) if timeout_s else 0
        self._margin_ms = max(MIN_MARGIN_MS, self.budget_ms // MARGIN_SHARE)
        self._offset_ms: int | None = None
        self._measured_at = 0
        self._lock = threading.Lock()

    def next_ms(self, client: Any) -> int:
        """The deadline of a call sent now on `client` (0: none, the client waits for ever)."""
        if not self.budget_ms:
            return 0
        now = self._clock.now_ms()
        offset = self._offset_ms
        if offset is None or now - self._measured_at >= OFFSET_REFRESH_MS:
            offset = self._measure(client)
        return now + offset + max(1, self.budget_ms - self._margin_ms)

    def _measure(self, client: Any) -> int:
        """Redis's clock minus this host's, taken at the middle of a TIME round trip."""
        with self._lock:
            sent = self._clock.now_ms()
            seconds, micros = _redis_time(client)
            received = self._clock.now_ms()
            self._offset_ms = int(seconds) * 1000 + int(micros) // 1000 - (sent + received) // 2
            self._measured_at = received
            return self._offset_ms


def _redis_time(client: Any) -> tuple[int, int]:
    default_node = getattr(client, "get_default_node", None)
    # A Redis Cluster client asks one node: the nodes share one clock, to NTP's precision.
    seconds, micros = client.time(target_nodes=default_node()) if default_node is not None else client.time()
    return int(seconds), int(micros)


class DeadlineScript:
    """A script registered on `client` that refuses to run past its call's deadline (redis-py's Script inside)."""

    def __init__(self, client: Any, text: str) -> None:
        self._client = client
        self._script = client.register_script(with_deadline(text))
        self.sha: str = self._script.sha

    def __call__(self, keys: list[Any], args: list[Any], client: Any = None, deadline_ms: int | None = None) -> Any:
        """Run the script (loading it first when Redis lacks it); DeadlinePassed when it reached Redis too late.
        deadline_ms: this deadline instead of the client's next one."""
        deadline = deadline_arg(client or self._client) if deadline_ms is None else deadline_ms
        try:
            return self._script(keys=keys, args=[*args, deadline], client=client)
        except ResponseError as error:
            raise_if_deadline(error)
            raise


class DeadlineFunction:
    """A Redis Function (a library whose code starts its function with the deadline prologue) called with its
    call's deadline; the library is loaded when Redis lacks it (a restart, FUNCTION FLUSH), as a script is on
    NOSCRIPT."""

    def __init__(self, name: str, library: str) -> None:
        self.name = name
        self._library = library

    def __call__(self, keys: list[Any], args: list[Any], client: Any) -> Any:
        """FCALL the function; DeadlinePassed when it reached Redis too late."""
        try:
            try:
                return client.fcall(self.name, len(keys), *keys, *args, deadline_arg(client))
            except ResponseError as error:
                if not str(error).startswith(FUNCTION_NOT_FOUND):
                    raise
            client.function_load(self._library, replace=True)
            return client.fcall(self.name, len(keys), *keys, *args, deadline_arg(client))
        except ResponseError as error:
            raise_if_deadline(error)
            raise


_deadlines_by_client: weakref.WeakKeyDictionary[Any, Deadlines] = weakref.WeakKeyDictionary()


def deadlines_of(client: Any) -> Deadlines:
    """The Deadlines of `client`, made on first use: one offset measurement per client, shared by its scripts."""
    deadlines = _deadlines_by_client.get(client)
    if deadlines is None:
        timeout_s = client.get_connection_kwargs().get("socket_timeout")
        deadlines = _deadlines_by_client.setdefault(client, Deadlines(timeout_s))
    return deadlines


def deadline_arg(client: Any) -> int:
    """The deadline to append to the ARGV of a script (with_deadline) sent now on `client`."""
    return deadlines_of(client).next_ms(client)
