"""Reading a check script's answer (check.lua, shape.lua): a code instead of a decision, or rows then the now."""

from __future__ import annotations

from typing import Any

from apps.engine.store.decide import Outcome
from apps.engine.store.plan import ItemPlan
from apps.engine.store.stored_decisions import _text, row_decision, stored_outcome
from apps.engine.types import Decision, LimitResult


def answer_code(answer: list[Any]) -> int | None:
    """The first number of a script's first row: NEEDS_SEED, REUSED or HANDOVER when it answered that instead of
    deciding (else an item's allowed 0|1, or REPLAYED); None when it has no row (an empty batch answers its now)."""
    first = answer[0] if answer else None
    return int(first[0]) if isinstance(first, list) and first else None


def answer_now(answer: list[Any]) -> tuple[list[list[Any]], int]:
    """(the rows, the script's now) of check.lua's answer to a call that decided (its now comes last)."""
    return answer[:-1], int(answer[-1])


def plan_decision(plan: ItemPlan, row: list[Any], now: int) -> Decision:
    """The Decision of `plan` from its row of check.lua's answer (see its header), decided at `now`."""
    if row[0] == -1:
        return stored_outcome(_text(row[1])).decision
    results = tuple(
        LimitResult(s.name, s.algorithm, s.unit, s.quantity, row[n + 1], row[n + 2], s.shadow, row[n] == 1)
        for s, n in zip((limit.spec for limit in plan.limits), range(4, len(row), 3), strict=True)
    )
    return row_decision(row, results, row[2] == 1, now)


def plan_outcome(plan: ItemPlan, row: list[Any], now: int) -> Outcome:
    """The Outcome (decision and lease) of `plan` from its row of check.lua's answer, decided at `now`."""
    if row[0] == -1:
        return stored_outcome(_text(row[1]))
    return Outcome(plan_decision(plan, row, now), plan.lease_id if row[3] > 0 else None, row[3])
