"""Load and measurement for the hybrid tests on real servers: many threads checking one customer across both
API processes, each answer with the server's decision time; what Redis ran (MONITOR), by hybrid instance; the
CPU of the gunicorn process trees (/proc, as bench/api/cpu.py reads it)."""

from __future__ import annotations

import http.client
import json
import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Answer:
    """One check as the client saw it; status None: the connection failed (a killed worker's request)."""

    url: str
    sent: float  # epoch seconds
    done: float
    status: int | None
    body: dict[str, Any]

    @property
    def admitted(self) -> bool:
        return self.status == 200 and self.body.get("allowed") is True

    def limit(self) -> dict[str, Any]:
        return self.body["limits"][0]

    def decided_ms(self, window_ms: int) -> int:
        """The server's decision time (ms): it answered reset_ms = its window's end - now, now being its clock in
        whole ms (floored), so now is in [floor(sent), floor(done)] and the window's end is the one multiple of
        the period in [floor(sent) + reset_ms, floor(done) + reset_ms] (latency < one period). Not sent + reset_ms:
        a server that decides within the millisecond the request was sent in (a 1 ms round trip is common here)
        has now < sent, and sent + reset_ms then lies just past the end, so the admission was put one whole
        window late: the "late admissions" docs/hybrid.md once could not explain."""
        reset = self.limit()["reset_ms"]
        end = math.ceil((math.floor(self.sent * 1000) + reset) / window_ms) * window_ms
        return end - reset


def post_check(url: str, key: str, body: bytes) -> Answer:
    host, port = url.removeprefix("http://").split(":")
    sent = time.time()
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("POST", "/api/v1/check", body, {"Authorization": f"Bearer {key}",
                                                           "Content-Type": "application/json"})  # fmt: skip
        response = connection.getresponse()
        status, payload = response.status, response.read()
    except (OSError, http.client.HTTPException):  # refused, reset, or cut short by a killed worker
        return Answer(url, sent, time.time(), None, {})
    finally:
        connection.close()
    try:
        parsed = json.loads(payload)
    except ValueError:
        parsed = {"unparsed": payload[:200].decode(errors="replace")}
    return Answer(url, sent, time.time(), status, parsed)


class Hammer:
    """`threads` threads checking one customer's operation, alternating between the servers, until stopped."""

    def __init__(self, urls: tuple[str, ...], key: str, customer: str, operation: str, threads: int = 12) -> None:
        self.body = json.dumps({"customer": customer, "operation": operation}).encode()
        self.urls, self.key, self.answers = urls, key, []  # type: ignore[var-annotated]
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(threads)]

    def _run(self, n: int) -> None:
        mine: list[Answer] = []
        while not self._stop.is_set():
            mine.append(post_check(self.urls[(n + len(mine)) % len(self.urls)], self.key, self.body))
        self.answers.extend(mine)  # list.extend is atomic under the GIL

    def __enter__(self) -> Hammer:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


@dataclass(frozen=True)
class Exchange:
    """One hybrid_sync.lua call as Redis ran it (MONITOR): who, for which window, with which absolute counts."""

    at: float  # Redis's clock, epoch seconds
    key: str
    instance: str
    start: int
    own: int
    own_prev: int


class Monitor:
    """Every command Redis runs while open (MONITOR, reconnecting after a restart): the hybrid exchanges on keys
    containing `customer`, and the other client calls naming it (exact mode's checks)."""

    def __init__(self, redis_url: str, customer: str) -> None:
        self.redis_url, self.customer = redis_url, customer
        self.exchanges: list[Exchange] = []
        self.calls: list[tuple[float, str]] = []  # (time, command) of every client call naming the customer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen_forever, daemon=True)

    def __enter__(self) -> Monitor:
        self._thread.start()
        time.sleep(0.2)  # MONITOR is on before the caller's work starts
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.2)
        self._stop.set()
        self._thread.join(timeout=10)

    def _listen_forever(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except (redis.RedisError, OSError, AttributeError):
                time.sleep(0.05)  # Redis restarted or paused: listen again

    def _listen(self) -> None:
        client = redis.Redis.from_url(self.redis_url, socket_timeout=0.5)
        try:
            with client.monitor() as monitor:
                while not self._stop.is_set():
                    try:
                        event = monitor.next_command()
                    except redis.TimeoutError:
                        continue
                    self._seen(event)
        finally:
            client.close()

    def _seen(self, event: dict[str, Any]) -> None:
        command = event["command"]
        if event["client_type"] == "lua" or self.customer not in command:
            return
        self.calls.append((event["time"], command))
        parts = command.split(" ")
        if parts[0].upper() == "EVALSHA" and ":h:" in parts[3]:
            key, instance, start, _prev_start, own, own_prev = parts[3:9]
            self.exchanges.append(Exchange(event["time"], key, instance, int(start), int(own), int(own_prev)))


def tree_cpu_s(master_pid: int) -> float:
    """CPU seconds of a gunicorn master, its live workers and the workers it reaped (/proc, bench/api/cpu.py)."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != master_pid:
            fields = _stat(int(entry.name))
            if fields and int(fields[1]) == master_pid:
                ticks += int(fields[11]) + int(fields[12])
    master = _stat(master_pid)
    ticks += sum(int(value) for value in master[11:15]) if master else 0
    return ticks / CLOCK_TICKS


def worker_pids(master_pid: int) -> list[int]:
    return sorted(
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and int(fields[1]) == master_pid
    )


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2 :].split()
