"""What a decision comes to for its caller: the outcome codes, the outcome of an engine or fallback decision (why a
refused check was refused, in words), and the items of a refused atomic batch that only the batch refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from apps.enforcement.decisions.specs import window_seconds
from apps.enforcement.fallback import FallbackDecision
from apps.engine import Decision, LimitResult
from apps.limits.algorithms import holds_leases
from apps.limits.snapshot import LimitConfig

OK, OVER_LIMIT, DENIED = "OK", "OVER_LIMIT", "DENIED"
# Refused because the check costs more than a limit's capacity: no wait will ever admit it as sent.
COST_EXCEEDS_LIMIT = "COST_EXCEEDS_LIMIT"
# An item of a refused atomic batch that its own limits (and rules) admitted: refused only because another
# item of the batch was (all or none).
BATCH_REJECTED = "BATCH_REJECTED"


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    allowed: bool
    code: str
    retry_after_ms: int | None
    limits: tuple[LimitResult, ...]
    windows_s: Mapping[str, int]
    degraded: bool = False
    # Names the configuration does not know, and new names over the budget (names.py).
    warnings: tuple[str, ...] = ()
    hybrid: frozenset[str] = frozenset()  # the limits decided by hybrid counting (hybrid.py)
    delay_ms: int = 0  # allowed, after waiting this long: a leaky bucket (shaper) queued the check


def outcome_of_decision(
    decision: Decision | FallbackDecision,
    limits: Sequence[LimitConfig],
    warnings: tuple[str, ...] = (),
    windows_s: Mapping[str, int] | None = None,
    hybrid: frozenset[str] = frozenset(),
) -> CheckOutcome:
    """`windows_s`: the limits' windows when the caller has them at hand (EngineArgs), else worked out here."""
    return CheckOutcome(
        decision.allowed,
        OK if decision.allowed else _refusal_code(decision),
        decision.retry_after_ms,
        decision.limits,
        {limit.name: window_seconds(limit) for limit in limits} if windows_s is None else windows_s,
        type(decision) is FallbackDecision,
        warnings,
        hybrid,
        # Only the engine shapes (a fallback or hybrid decision admits what fits now, or refuses).
        decision.delay_ms if type(decision) is Decision else 0,
    )


def _refusal_code(decision: Decision | FallbackDecision) -> str:
    """OVER_LIMIT when waiting (or a release) can help; COST_EXCEEDS_LIMIT when nothing ever will."""
    if decision.retry_after_ms is not None or any(_held_until_released(result) for result in decision.limits):
        return OVER_LIMIT
    return COST_EXCEEDS_LIMIT


def _held_until_released(result: LimitResult) -> bool:
    """A concurrency limit full of allocations (leases with no expiry): no time to wait for, but a release frees
    a slot, so the check is over the limit, not costing more than it can ever hold."""
    return result.over and not result.shadow and holds_leases(result.algorithm) and result.remaining == 0


def outcome_message(outcome: CheckOutcome) -> str | None:
    """Why a check was refused, in words (None when it was admitted)."""
    if outcome.allowed:
        return None
    if outcome.code == DENIED:
        return "Refused by an access rule (a deny rule or an inactive customer); waiting will not help."
    over = [result for result in outcome.limits if result.over and not result.shadow]
    names = ", ".join(f"“{result.name}” ({result.limit} {result.unit})" for result in over) or "a limit"
    if outcome.code == COST_EXCEEDS_LIMIT:
        return f"This check costs more than {names} can ever admit: split it, or ask for a higher limit."
    if outcome.code == BATCH_REJECTED:
        when = (
            "the batch as sent can never pass whole"
            if outcome.retry_after_ms is None
            else (f"retry the batch after {outcome.retry_after_ms} ms")
        )
        return f"Admitted on its own, but another item of this atomic batch was refused, so none was; {when}."
    if outcome.retry_after_ms is None:
        return f"Over {names}: every slot is held until released; release one or ask for a higher limit."
    return f"Over {names}; retry after {outcome.retry_after_ms} ms."


def batch_rejected(outcomes: list[CheckOutcome]) -> list[CheckOutcome]:
    """In a refused atomic batch, the items no enforced limit of their own refused (at their place in the batch)
    say BATCH_REJECTED instead of the code of the item that was refused; they keep the batch's retry_after."""
    return [
        dataclasses.replace(outcome, code=BATCH_REJECTED)
        if outcome.code in (OVER_LIMIT, COST_EXCEEDS_LIMIT)
        and not any(result.over and not result.shadow for result in outcome.limits)
        else outcome
        for outcome in outcomes
    ]
