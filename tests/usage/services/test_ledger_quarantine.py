"""The ledger of decisions made without Redis: a decision PostgreSQL refuses on its own (a NUL byte in its
customer) is quarantined and leaves the ledger; the others are written, and the next round does not trip on it."""

import pytest
from prometheus_client import REGISTRY

from apps.enforcement.counters.recovery import Spending
from apps.enforcement.ledger.pending import decision_ledger
from apps.usage.models import CounterRecord, QuarantinedUsage, RollupMark, UsageMinute
from apps.usage.services import DecisionCounts

pytestmark = pytest.mark.django_db

MINUTE = 29_478_720  # 2026-01-18T00:00Z


def quarantined_total() -> float:
    return REGISTRY.get_sample_value("quota_rows_quarantined_total", {"writer": "decision_ledger"}) or 0.0


def test_a_poisoned_decision_is_quarantined_and_the_others_are_written(caplog) -> None:
    before = quarantined_total()
    spending = Spending()
    spending.add("c:{c=acct-1}:cal:daily", 0, 2)
    decision_ledger.add(DecisionCounts("acct-1", "Op", MINUTE, allowed=1, degraded=1, costs={"requests": 2}), spending)
    decision_ledger.add(DecisionCounts("a\x00b", "Op", MINUTE, rule_denied=1))
    decision_ledger.add(DecisionCounts("acct-2", "Op", MINUTE + 1, unavailable=1))
    decision_ledger.add(DecisionCounts("acct-1", "Op", MINUTE, allowed=1, degraded=1, costs={"requests": 2}))

    assert decision_ledger.flush() == 3

    rows = UsageMinute.objects.order_by("customer").values_list("customer", "allowed", "degraded", "unavailable")
    assert list(rows) == [("acct-1", 2, 2, 0), ("acct-2", 0, 0, 1)]
    assert UsageMinute.objects.get(customer="acct-1").costs == {"requests": 4}
    assert CounterRecord.objects.get().amount == 2, "what the good decisions spent is written with them"
    assert sorted(RollupMark.objects.values_list("minute", flat=True)) == [MINUTE, MINUTE + 1]
    held = QuarantinedUsage.objects.get()
    key = ("a\x00b", "Op", MINUTE)
    assert (held.writer, held.key, held.minute) == ("decision_ledger", repr(key), MINUTE)
    assert "rule_denied=1" in held.row
    assert quarantined_total() == before + 1
    assert repr(key) in caplog.text

    assert decision_ledger.flush() == 0, "nothing is left pending to fail the next round"
    assert QuarantinedUsage.objects.count() == 1
