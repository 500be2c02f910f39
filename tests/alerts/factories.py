"""Factories for the alert models, and a real webhook receiver on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import factory

from apps.alerts.models import AlertEvent, AlertRule, EventKind, JobOutcome, RuleKind


class AlertRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AlertRule
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"rule-{n}")
    kind = RuleKind.DENIALS
    threshold = 10


class AlertEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AlertEvent

    rule = factory.SubFactory(AlertRuleFactory)
    rule_name = factory.LazyAttribute(lambda event: event.rule.name if event.rule else "deleted rule")
    kind = EventKind.FIRED
    subject = factory.Sequence(lambda n: f"customer acct-{n}")
    at = factory.Sequence(lambda n: dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=n))
    value = 42
    message = "Customer had 42 checks refused by limits in one minute."


class JobOutcomeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = JobOutcome
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"job_{n}")
    last_run_at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    last_failure_at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    failures_in_a_row = 1
    last_error = "RedisError: Redis went away"


class WebhookReceiver:
    """A real HTTP server on 127.0.0.1 that records each POST (headers and body) and answers the next status
    in `statuses` (200 once they run out)."""

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.statuses = list(statuses or [])
        self.received: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks/quota"

    def payloads(self) -> list[dict[str, Any]]:
        return [json.loads(request["body"]) for request in self.received]

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _handler_for(receiver: WebhookReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
            status = receiver.statuses.pop(0) if receiver.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep the test output quiet

    return Handler


class StallingReceiver:
    """A real TCP server on 127.0.0.1 that accepts every connection and reads the request, then never answers, or
    (`trickle_every_s`) answers one byte at a time and never finishes: the status line and then an endless header,
    or (`body=True`) whole headers at once and then an endless body. `connections` counts the attempts it saw.
    Each connection is held `hold_s` at most, then closed, so a client without a deadline is not stuck for good."""

    def __init__(self, *, trickle_every_s: float | None = None, body: bool = False, hold_s: float = 60.0) -> None:
        self.trickle_every_s = trickle_every_s
        self.body = body
        self.hold_s = hold_s
        self.connections = 0
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/hooks/quota"

    def __enter__(self) -> StallingReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            threading.Thread(target=self._stall, args=(connection,), daemon=True).start()

    def _stall(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(1)
            try:
                connection.recv(64 * 1024)  # the request (small: one recv holds it)
                answer, until = self._answer(), time.monotonic() + self.hold_s
                while not self._stop.wait(self.trickle_every_s or 0.1) and time.monotonic() < until:
                    if self.trickle_every_s:
                        connection.sendall(next(answer))
            except OSError:
                return  # the client gave up and closed: what a deadline does

    def _answer(self) -> Iterator[bytes]:
        if self.body:
            head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n"
            return itertools.chain([head], itertools.repeat(b"x"))
        head = b"HTTP/1.1 200 OK\r\nX-Trickle: "
        return itertools.chain((bytes([byte]) for byte in head), itertools.repeat(b"x"))
