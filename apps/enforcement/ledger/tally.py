"""The one usage path of a decision a store made: tallied here, in the process that asked, into the ledger.

Called where decisions come back from the engine (decisions/services.py for checks and batches, leases/services.py
for lease acquisitions, hybrid/decide.py for the exact part of hybrid checks), whichever script or store decided:
it reads only the item, its limit specs and the Decision. Per decision actually made (not a dry run, not a replay;
a call refused for a reused request id, past its deadline or timed out returns no decision, so it writes nothing,
now or later) it counts what check.lua's usage phase counted before:
- allowed or denied; shadow_denied when an admitted check was over a shadow limit;
- logged: one per audited limit (check.lua writes one decision log entry for each, allowed or denied);
- the admitted costs per unit (usage_costs: requests is 1 unless given);
- what an admitted check spent on each durable counter that admitted it (a shadow limit over it spent nothing),
  in the bucket of the decision's time (durability.record_bucket), as the records a lost counter is rebuilt from.
Everything is bucketed at decision.decided_at_ms, the store's own now (the script's clock), so a record lands in
the window the counter was spent in even when this host's clock is off; a store that does not say falls back to
this host's clock.

Cost: one dict lookup and a few integer additions under a lock per decision (pending.py sums per customer x
operation x service x key x minute); a durable limit adds its counter key and bucket (bench/usage/tally_cost.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from apps.engine import CheckItem, Decision, KeyLayout, LimitSpec
from apps.engine.store.plan import usage_costs
from apps.enforcement.fallback.database import record_start
from apps.enforcement.ledger.pending import ALLOWED, DENIED, MINUTE_MS, DecisionLedger, Record, decision_ledger

_layout = KeyLayout("ledger")  # only counter ids are taken from it: a counter key without its prefix


def decision_tally(
    item: CheckItem, specs: Sequence[LimitSpec], decision: Decision, ledger: DecisionLedger = decision_ledger
) -> None:
    """Count `decision` on `item` against `specs` (in the order the store got them) into `ledger`."""
    if item.dry_run or decision.replayed:
        return
    now = decision.decided_at_ms or time.time_ns() // 1_000_000
    key = (item.customer, item.operation, item.service, item.api_key, now // MINUTE_MS)
    logged = 0
    durable = False
    for spec in specs:
        if spec.audit:
            logged += 1
        if spec.durable:
            durable = True
    if not decision.allowed:
        ledger.count(key, DENIED, False, logged, (), [])
        return
    shadow = False
    for result in decision.limits:
        if result.over and result.shadow:
            shadow = True
            break
    records = _records(item, specs, decision, now) if durable else []
    ledger.count(key, ALLOWED, shadow, logged, usage_costs(item), records)


def decisions_tally(
    pairs: Sequence[tuple[CheckItem, Sequence[LimitSpec]]],
    decisions: Sequence[object],
    ledger: DecisionLedger = decision_ledger,
) -> None:
    """decision_tally for each decision of a batch a store made; those it did not make (a failure policy's, which
    counts its own) are skipped."""
    for (item, specs), decision in zip(pairs, decisions, strict=True):
        if isinstance(decision, Decision):
            decision_tally(item, specs, decision, ledger)


def _records(item: CheckItem, specs: Sequence[LimitSpec], decision: Decision, now: int) -> list[Record]:
    """What an admitted check spent on its durable counters: ((counter, bucket start), cost) each."""
    records = []
    for spec, result in zip(specs, decision.limits, strict=True):
        if not spec.durable or result.over:
            continue
        cost = item.cost_of(spec.unit)
        if cost > 0:
            counter = _layout.counter_id(_layout.counter_keys(spec, item)[0])
            records.append(((counter, record_start(spec, item, now)), cost))
    return records
