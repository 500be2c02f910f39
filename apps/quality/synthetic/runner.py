"""The generator: the scenario's users as threads against a running platform over HTTP (the Python SDK's client
and wire format), each recording what it did in one TrafficRecord.

No Django here: the bench and the tests run it against a server they started, the command against any URL.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

from quota_client import QuotaClient, QuotaError, Urllib3Transport, wire
from quota_client.types import Decision

from apps.quality.synthetic.record import Session, TrafficRecord
from apps.quality.synthetic.scenario import QUERIES_LIMIT, QUERY_OPERATION, SESSION_OPERATION, Scenario

# Progress: (seconds run, sessions opened so far), called about every PROGRESS_EVERY_S.
Progress = Callable[[float, int], None]
PROGRESS_EVERY_S = 0.2
# A refused aggressive acquire waits the platform's retry time, at least / at most this long (jittered).
RETRY_FLOOR_S, RETRY_CAP_S = 0.05, 0.5
# Waiting for the platform to serve a configuration just written: a key and customers reach each server process
# with its next config snapshot (QUOTA_SNAPSHOT_POLL_S, 0.5 s by default). Polled this often, up to the timeout;
# the answers asked in a row cover a server's several workers, each with a snapshot of its own.
READY_POLL_S = 0.25
READY_STREAK = 5
# Answers meaning "not yet": the key is unknown to the server (401), or it sent too many unknown keys (429).
NOT_YET_STATUSES = (401, 429)


class NotReady(Exception):
    """The platform did not serve the key and the scenario's customers within the timeout; says what it answered."""


@dataclass(frozen=True, slots=True)
class Held:
    lease: str
    opened_ms: int
    expires_ms: int


def epoch_ms(iso: str) -> int:
    return round(datetime.fromisoformat(iso).timestamp() * 1000)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Generator:
    """`Generator(scenario, url, api_key).run()` runs the scenario for its duration and returns the record."""

    def __init__(self, scenario: Scenario, base_url: str, api_key: str, *, timeout_s: float = 5.0) -> None:
        self.scenario = scenario
        threads = scenario.common + scenario.aggressive * (scenario.concurrency + scenario.extra_sessions + 1)
        transport = Urllib3Transport(pool_size=max(threads, 1))
        self.client = QuotaClient(base_url, api_key, timeout_s=timeout_s, cache_denials=False, transport=transport)
        self.record = TrafficRecord(scenario.groups(), scenario.openings_period_s * 1000)
        self.errors: list[str] = []
        self._deadline = 0.0
        self._lock = threading.Lock()

    def run(self, progress: Progress | None = None) -> TrafficRecord:
        started = time.monotonic()
        self._deadline = started + self.scenario.duration_s
        self.record.started_ms = now_ms()
        threads = [threading.Thread(target=self._guarded, args=work, daemon=True) for work in self._work()]
        for thread in threads:
            thread.start()
        while threads:
            threads[0].join(PROGRESS_EVERY_S)
            threads = [thread for thread in threads if thread.is_alive()]
            if progress is not None:
                progress(time.monotonic() - started, self.record.sessions)
        self.record.finished_ms = now_ms()
        self.client.close()
        return self.record

    def wait_ready(self, timeout_s: float) -> float:
        """Wait until the platform accepts the key and knows the scenario's customers (a configuration just
        imported reaches its processes with their next snapshot); returns the seconds waited. Reads a customer's
        limits (a dry run: counts nothing). Raises NotReady with the last answer after `timeout_s`."""
        customers = [*self.scenario.aggressive_customers(), *self.scenario.common_customers()]
        path = f"/api/v1/customers/{quote(customers[-1], safe='')}/limits"
        started = time.monotonic()
        streak, last = 0, "no answer yet"
        while streak < READY_STREAK:
            try:
                response = self.client.exchange("GET", path)
            except QuotaError as error:
                ready, last = False, str(error)
            else:
                answer = wire.json_of(response) or {}
                ready = response.status == 200 and bool(answer.get("known"))
                if response.status == 200:
                    last = f"customer {customers[-1]} {'known' if ready else 'not known yet'}"
                elif response.status in NOT_YET_STATUSES:
                    last = f"HTTP {response.status}: {wire.error_detail(answer)[1] or 'key not accepted'}"
                else:
                    raise NotReady(f"the platform answered HTTP {response.status}: {response.body[:300]!r}")
            streak = streak + 1 if ready else 0
            if streak >= READY_STREAK:
                break
            if time.monotonic() - started > timeout_s:
                raise NotReady(f"not ready after {timeout_s:g} s; last answer: {last.rstrip('.')}")
            time.sleep(READY_POLL_S if not ready else 0.0)
        return time.monotonic() - started

    def _work(self) -> list[tuple[Callable[..., None], str, int]]:
        work: list[tuple[Callable[..., None], str, int]] = []
        work += [(self._common_user, customer, 0) for customer in self.scenario.common_customers()]
        sessions = self.scenario.concurrency + self.scenario.extra_sessions
        for customer in self.scenario.aggressive_customers():
            work += [(self._aggressive_sessions, customer, thread) for thread in range(1, sessions + 1)]
            work.append((self._aggressive_queries, customer, 0))
        return work

    def _guarded(self, target: Callable[[str, int], None], customer: str, thread: int) -> None:
        """One user's thread: an error of the platform (or the network) stops this thread, recorded, not others."""
        try:
            target(customer, thread)
        except QuotaError as error:
            with self._lock:
                self.errors.append(f"{customer}/{thread}: {error}")

    def _left_s(self) -> float:
        return self._deadline - time.monotonic()

    def _sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self._left_s())))

    # -- the users -------------------------------------------------------------------------------------------
    def _common_user(self, customer: str, thread: int) -> None:
        rng, scenario = self.scenario.rng(customer, thread), self.scenario
        while True:
            self._sleep(rng.uniform(*scenario.think_s))
            hold, abandon = rng.uniform(*scenario.hold_s), rng.random() < scenario.abandon_p
            checks = rng.randint(*scenario.checks_per_session)
            if self._left_s() <= 0:
                return
            started = time.monotonic()
            held = self.acquire(customer)
            if isinstance(held, Decision):
                continue
            for _ in range(checks):
                self.query(customer)
            time.sleep(max(0.0, hold - (time.monotonic() - started)))
            released = None if abandon else self.release(held.lease)
            self.record.session(customer, Session(held.lease, held.opened_ms, held.expires_ms, released))

    def _aggressive_sessions(self, customer: str, thread: int) -> None:
        rng = self.scenario.rng(customer, thread)
        while self._left_s() > 0:
            held = self.acquire(customer)
            if isinstance(held, Decision):
                wait = min(max(held.retry_after_s or 0.0, RETRY_FLOOR_S), RETRY_CAP_S)
                self._sleep(wait * rng.uniform(1.0, 1.5))
                continue
            time.sleep(self.scenario.aggressive_hold_s)
            released = self.release(held.lease)
            self.record.session(customer, Session(held.lease, held.opened_ms, held.expires_ms, released))

    def _aggressive_queries(self, customer: str, thread: int) -> None:
        while self._left_s() > 0:
            self.query(customer)
            self._sleep(self.scenario.query_every_s)

    # -- the platform ----------------------------------------------------------------------------------------
    def acquire(self, customer: str) -> Held | Decision:
        """Take a lease; the refusal's decision when refused (recorded by its code)."""
        request_id = uuid.uuid4().hex
        body = {"customer": customer, "operation": SESSION_OPERATION, "ttl_s": self.scenario.ttl_s}
        response = self.client.exchange("POST", "/api/v1/leases", {**body, "request_id": request_id})
        decision = wire.decision_of(response, self.client.base_url, request_id)
        answer = wire.json_of(response) or {}
        if not decision.allowed or not answer.get("lease_id"):
            self.record.refusal(customer, decision.code if not decision.allowed else "NO_LEASE")
            return decision
        expires_ms = epoch_ms(answer["expires_at"])
        return Held(answer["lease_id"], expires_ms - self.scenario.ttl_s * 1000, expires_ms)

    def release(self, lease: str) -> int:
        """Give the lease back; returns when the release was sent (the platform held it at least until then)."""
        sent = now_ms()
        response = self.client.exchange("DELETE", f"/api/v1/leases/{quote(lease, safe='')}")
        if response.status not in (204, 404):
            raise wire.error_of(response, self.client.base_url)
        return sent

    def query(self, customer: str) -> Decision:
        decision = self.client.check(customer, QUERY_OPERATION)
        status = next((limit for limit in decision.limits if limit.name == QUERIES_LIMIT), None)
        admitted = status.limit - status.remaining if status is not None and decision.allowed else 0
        self.record.check(customer, decision.allowed, admitted)
        return decision
