import datetime as dt

import factory
from django.utils import timezone

from apps.quality.models import AuditRun, DecisionEvent, LogCheck

START = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)


class DecisionEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DecisionEvent

    slot = "qp:dlog:{c=acme}"
    entry_id = factory.Sequence(lambda n: f"{1767571200000 + n}-0")
    at = factory.Sequence(lambda n: START + dt.timedelta(milliseconds=n))
    kind = "allow"
    customer = "acme"
    operation = "PutRecords"
    limit = "per-minute"
    algorithm = "fixed_window"
    key = "qp:c:{c=acme}:per-minute"
    cost = 1
    quantity = 100
    period_ms = 60_000
    window_ms = 1767571200000
    mode = "exact"
    instance = "node-1:100"


class AuditRunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AuditRun

    start = START
    end = START + dt.timedelta(days=1)
    started_at = factory.LazyFunction(timezone.now)
    finished_at = factory.LazyFunction(timezone.now)
    events = 10
    report = factory.LazyFunction(lambda: {"events": 10, "violations": []})


class LogCheckFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LogCheck

    minute = factory.Sequence(lambda n: 29_452_853 + n)
    customer = "acme"
    operation = "PutRecords"
    usage_logged = 5
    drained = 5
