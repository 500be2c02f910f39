"""What a decision comes to for its caller: the outcome codes, the outcome of an engine or fallback decision (why a
refused check was refused, in words), whose counter each limit is (its subject), and the items of a refused atomic
batch that only the batch refused.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from apps.enforcement.decisions.specs import keys_by_of, window_seconds
from apps.enforcement.fallback import FallbackDecision
from apps.engine import CheckItem, Decision, LimitResult
from apps.engine.types import ATTRIBUTE_PREFIX
from apps.limits.algorithms import holds_leases
from apps.limits.snapshot import LimitConfig

OK, OVER_LIMIT, DENIED = "OK", "OVER_LIMIT", "DENIED"
# Refused because the check costs more than a limit's capacity: no wait will ever admit it as sent.
COST_EXCEEDS_LIMIT = "COST_EXCEEDS_LIMIT"
# An item of a refused atomic batch that its own limits (and rules) admitted: refused only because another
# item of the batch was (all or none).
BATCH_REJECTED = "BATCH_REJECTED"
# A limit's subject: the values of a check its counter is keyed by (key_by, apps/engine/keys.py), in this order,
# then `attributes`. How a message names each.
SUBJECT_WORDS = {"customer": "customer", "resource": "resource", "ip": "ip", "service": "service", "api_key": "API key"}
_NO_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType({})


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
    # The check decided and each limit's key_by: whose counter each limit in `limits` is (outcome_subject).
    item: CheckItem | None = None
    keys_by: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _NO_KEYS)


def outcome_of_decision(
    decision: Decision | FallbackDecision,
    limits: Sequence[LimitConfig],
    warnings: tuple[str, ...] = (),
    windows_s: Mapping[str, int] | None = None,
    hybrid: frozenset[str] = frozenset(),
    *,
    item: CheckItem,
    keys_by: Mapping[str, tuple[str, ...]] | None = None,
) -> CheckOutcome:
    """`windows_s`, `keys_by`: the limits' windows and key_by when the caller has them at hand (EngineArgs), else
    worked out here. `item`: the check as decided (its customer, resource, ... name each limit's counter)."""
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
        item,
        keys_by_of(limits) if keys_by is None else keys_by,
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


def outcome_subject(outcome: CheckOutcome, name: str) -> dict[str, Any]:
    """Whose counter limit `name` of the outcome is: the check's values it is keyed by, as Kinesis names the account,
    stream and shard it throttled. {"customer": ..., "resource": ..., "attributes": {name: value or None}}; {} for
    a limit counted for every caller together. The values are the check's own (a key bound to a customer can only
    send its own customer; service and api_key are the calling key's)."""
    item = outcome.item
    key_by = outcome.keys_by.get(name, ())
    if item is None or not key_by:
        return {}
    parts, attributes = _subject_parts(key_by)
    subject: dict[str, Any] = {part: getattr(item, part) for part in parts}
    if attributes:
        subject["attributes"] = {attribute: item.attributes.get(attribute) for attribute in attributes}
    return subject


@functools.lru_cache(maxsize=4096)
def _subject_parts(key_by: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A key_by's subject fields in SUBJECT_WORDS' order and its attributes sorted: once per key_by, not per answer."""
    attributes = sorted(entry[len(ATTRIBUTE_PREFIX) :] for entry in key_by if entry.startswith(ATTRIBUTE_PREFIX))
    return tuple(part for part in SUBJECT_WORDS if part in key_by), tuple(attributes)


def subject_words(subject: Mapping[str, Any]) -> str:
    """A subject in a message: 'for customer “acct-1”, resource “orders”, attribute shard “7”'."""
    if not subject:
        return "for all callers together"
    parts = [f"{SUBJECT_WORDS[part]} “{value}”" for part, value in subject.items() if part in SUBJECT_WORDS]
    parts += [
        f"attribute {name} “{value}”" if value is not None else f"attribute {name} unset"
        for name, value in subject.get("attributes", {}).items()
    ]
    return "for " + ", ".join(parts)


def outcome_message(outcome: CheckOutcome) -> str | None:
    """Why a check was refused, in words (None when it was admitted), naming each limit over and whose count it is."""
    if outcome.allowed:
        return None
    if outcome.code == DENIED:
        return "Refused by an access rule (a deny rule or an inactive customer); waiting will not help."
    over = [result for result in outcome.limits if result.over and not result.shadow]
    names = (
        ", ".join(
            f"“{result.name}” ({result.limit} {result.unit} {subject_words(outcome_subject(outcome, result.name))})"
            for result in over
        )
        or "a limit"
    )
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
