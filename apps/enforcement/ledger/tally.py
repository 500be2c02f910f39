"""The one usage path of a decision a store made: tallied in the process that asked, into its decision ledger.

Called where decisions come back from the engine (decisions/services.py for checks and batches, leases/services.py
for lease acquisitions, hybrid/decide.py for the exact part of hybrid checks), whichever script or store decided:
it reads only the item, its limit specs and the Decision (apps/engine/decision_usage.py says what each adds). A call
refused for a reused request id, past its deadline or timed out returns no decision, so it writes nothing, now or
later. Everything is bucketed at decision.decided_at_ms, the store's own now (the script's clock), so a record lands
in the window the counter was spent in even when this host's clock is off; a store that does not say falls back to
this host's clock.

Cost: a few attribute reads, one dict lookup and a few integer additions under a lock per decision (pending.py sums
per customer x operation x service x key x minute); a durable limit adds its counter key and bucket
(bench/usage/tally_cost.py measures it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from apps.enforcement.ledger.pending import ALLOWED, DENIED, MINUTE_MS, DecisionLedger, decision_ledger
from apps.engine import CheckItem, Decision, LimitSpec
from apps.engine.decision_usage import decision_usage


def decision_tally(
    item: CheckItem, specs: Sequence[LimitSpec], decision: Decision, ledger: DecisionLedger = decision_ledger
) -> None:
    """Count `decision` on `item` against `specs` (in the order the store got them) into `ledger`."""
    now = decision.decided_at_ms or time.time_ns() // 1_000_000
    usage = decision_usage(item, specs, decision, now)
    if usage is None:
        return
    allowed, shadow, logged, costs, records = usage
    key = (item.customer, item.operation, item.service, item.api_key, now // MINUTE_MS)
    ledger.count(key, ALLOWED if allowed else DENIED, shadow, logged, costs, records)


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
