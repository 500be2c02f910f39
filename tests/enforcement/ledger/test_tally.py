"""The tally: what each decision a store made adds to usage, counted in the process that asked (the one path)."""

from __future__ import annotations

import pytest

from apps.enforcement.ledger.pending import DecisionLedger
from apps.enforcement.ledger.tally import decision_tally, decisions_tally
from apps.engine import CheckItem, Decision, LimitResult, LimitSpec

MINUTE_MS = 60_000
AT = 1_767_225_600_000 + 5_000  # 2026-01-01T00:00:05Z
DAILY = LimitSpec("daily", "calendar", 100, calendar_period="day", key_by=("customer",), audit=True, durable=True)
WATCH = LimitSpec("watch", "fixed_window", 1, period_s=60, key_by=("customer",), shadow=True)
BURST = LimitSpec("burst", "token_bucket", 10, period_s=60, key_by=("customer",), durable=True)


def result(spec: LimitSpec, *, over: bool = False) -> LimitResult:
    return LimitResult(spec.name, spec.algorithm, spec.unit, spec.quantity, 0, 0, spec.shadow, over)


def rows(ledger: DecisionLedger) -> list[tuple]:
    return sorted(
        (r.customer, r.operation, r.service, r.api_key, r.minute, r.allowed, r.denied, r.shadow_denied, r.logged,
         dict(r.costs))
        for r in ledger.pending_rows()
    )  # fmt: skip


def test_admitted_and_refused_checks_count_as_the_check_script_counted_them() -> None:
    ledger = DecisionLedger()
    item = CheckItem("acct-1", "Put", costs={"records": 7}, service="ingest", api_key="qp_1")
    specs = [DAILY, WATCH, BURST]
    admitted = Decision(True, 0, (result(DAILY), result(WATCH, over=True), result(BURST)), decided_at_ms=AT)
    refused = Decision(False, 100, (result(DAILY), result(WATCH), result(BURST, over=True)), decided_at_ms=AT + 1)

    decision_tally(item, specs, admitted, ledger)
    decision_tally(item, specs, admitted, ledger)
    decision_tally(item, specs, refused, ledger)

    minute = AT // MINUTE_MS
    assert rows(ledger) == [
        ("acct-1", "Put", "ingest", "qp_1", minute, 2, 1, 2, 3, {"records": 14, "requests": 2}),
    ]
    # What the admitted checks spent on their durable counters that admitted them (the shadow one over it: nothing).
    records = ledger._spending.records
    day = 1_767_225_600_000
    assert records == {
        ("c:{c=acct-1}:cal:daily:c=acct-1", day): 2,
        ("c:{c=acct-1}:tb.60000:burst:c=acct-1", minute * MINUTE_MS): 2,
    }
    assert ledger._spending.counters == set(), "Redis holds these counters: nothing to rebuild"


@pytest.mark.parametrize(
    ("item", "decision"),
    [
        (CheckItem("acct-1", "Put", dry_run=True), Decision(True, 0, (result(BURST),), decided_at_ms=AT)),
        (CheckItem("acct-1", "Put", request_id="r-1"), Decision(True, 0, (result(BURST),), replayed=True)),
    ],
    ids=["dry run", "replay"],
)
def test_a_dry_run_or_a_replay_counts_nothing(item: CheckItem, decision: Decision) -> None:
    ledger = DecisionLedger()

    decision_tally(item, [BURST], decision, ledger)

    assert ledger.pending_rows() == []
    assert ledger._spending.records == {}


def test_the_minute_and_the_buckets_are_the_stores_time_not_this_hosts() -> None:
    ledger = DecisionLedger()
    decided = 28_333_333 * MINUTE_MS + 59_999  # the last millisecond of a minute, in 2023: far from this host's clock

    decision_tally(CheckItem("acct-1", "Put"), [BURST], Decision(True, 0, (result(BURST),), decided_at_ms=decided),
                   ledger)  # fmt: skip

    (row,) = ledger.pending_rows()
    assert row.minute == decided // MINUTE_MS
    assert list(ledger._spending.records) == [("c:{c=acct-1}:tb.60000:burst:c=acct-1", 28_333_333 * MINUTE_MS)]


def test_a_batch_skips_what_a_failure_policy_decided_it_counts_its_own() -> None:
    class PolicyDecision:  # what fallback_batch answers: not a Decision
        allowed = True

    ledger = DecisionLedger()
    pairs = [(CheckItem("acct-1", "Put"), [BURST]), (CheckItem("acct-2", "Put"), [BURST])]

    decisions_tally(pairs, [Decision(True, 0, (result(BURST),), decided_at_ms=AT), PolicyDecision()], ledger)

    assert [(row.customer, row.allowed) for row in ledger.pending_rows()] == [("acct-1", 1)]
