"""Factories for the alert models, and a real webhook receiver on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import json
import threading
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
