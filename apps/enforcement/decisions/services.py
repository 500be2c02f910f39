"""Deciding checks: authorize, resolve against the snapshot, one engine call, shape the outcome.

No database query on this path: config comes from the in-process snapshot the view read once for the
request, counters from one Redis round trip per check or per batch (store.engine_call). Each decision the store
made is tallied into this process's decision ledger (ledger/tally.py), the one usage path.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from apps.apikeys.selectors import ApiPrincipal
from apps.common.background import BackgroundRecorder
from apps.common.exceptions import Unprocessable
from apps.customers.services import customers_record_seen
from apps.enforcement.counters.guarded_store import engine_call
from apps.enforcement.decisions.outcomes import (
    BATCH_REJECTED,
    DENIED,
    OK,
    CheckOutcome,
    batch_rejected,
    outcome_of_decision,
)
from apps.enforcement.decisions.specs import EngineArgs, engine_args, limit_spec_of
from apps.enforcement.decisions.unknown_names import OTHER_NAME, names_checked
from apps.enforcement.fallback import FallbackDecision, fallback_batch, fallback_check, fallback_replays
from apps.enforcement.hybrid.decide import hybrid_batch, hybrid_decide
from apps.enforcement.ledger.pending import decision_counts, decision_ledger
from apps.enforcement.ledger.tally import decision_tally, decisions_tally
from apps.engine import BatchMode, CheckItem, Decision, IdempotencyKeyReused, LimitSpec
from apps.limits.algorithms import holds_leases
from apps.limits.models import RuleAction
from apps.limits.resolution import Resolution, resolve
from apps.limits.snapshot import LimitConfig, Snapshot


@dataclass(frozen=True, slots=True)
class Resolved:
    """A check made ready for the engine: its item in the customer's time zone, and what applies to it."""

    item: CheckItem
    resolution: Resolution
    warnings: tuple[str, ...] = ()

    @property
    def counted(self) -> list[LimitConfig]:
        # Limits whose counter is the set of leases held are spent by leases, not by checks.
        return [limit for limit in self.resolution.limits if not holds_leases(limit.algorithm)]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def check_resolve(principal: ApiPrincipal, item: CheckItem, snapshot: Snapshot) -> Resolved:
    """What applies to one authorized check (its new names within the budget, names.py)."""
    (named,) = names_checked(principal, [item], snapshot)
    return named_resolve(principal, named, snapshot)


def named_resolve(principal: ApiPrincipal, named: tuple[CheckItem, tuple[str, ...]], snapshot: Snapshot) -> Resolved:
    """What applies to a check whose names were checked; an unknown customer is remembered, to be recorded
    off the hot path (not for a dry run: it writes nothing)."""
    item, warnings = named
    resolution = resolve(snapshot, item, now_ms=_now_ms(), api_key_prefix=principal.prefix)
    if resolution.customer is None and not item.dry_run and item.customer != OTHER_NAME:
        unknown_customers.record(item.customer, True)
    # Limits keyed by service or api_key count per calling service or key (its prefix, never the secret).
    if (resolution.timezone, principal.service, principal.prefix) != (item.timezone, item.service, item.api_key):
        item = dataclasses.replace(
            item, timezone=resolution.timezone, service=principal.service, api_key=principal.prefix
        )
    return Resolved(item, resolution, warnings)


def warned(outcome: CheckOutcome, resolved: Resolved) -> CheckOutcome:
    return dataclasses.replace(outcome, warnings=resolved.warnings) if resolved.warnings else outcome


def outcome_of_rule(resolved: Resolved) -> CheckOutcome:
    """An access rule decided: no limit was asked, and Redis never sees the check, so it is counted here."""
    allowed = resolved.resolution.action == RuleAction.ALLOW
    if not resolved.item.dry_run:
        counts = decision_counts(
            resolved.item, "allowed" if allowed else "rule_denied", degraded=False, now_ms=_now_ms()
        )
        decision_ledger.add(counts)
    return CheckOutcome(allowed, OK if allowed else DENIED, 0 if allowed else None, (), {})


def specs_of(limits: Sequence[LimitConfig]) -> list[LimitSpec]:
    return [limit_spec_of(limit) for limit in limits]


def decide(item: CheckItem, limits: Sequence[LimitConfig], warnings: tuple[str, ...] = ()) -> CheckOutcome:
    """One engine round trip, or the limits' failure policies when Redis is unreachable or the breaker is open."""
    args = engine_args(limits)
    try:
        if args.hybrid:
            decision = hybrid_decide(item, args)
        else:
            decision = _replayed_or_decided(item, args)
            if isinstance(decision, Decision):  # a failure policy's decision counted itself
                decision_tally(item, args.specs, decision)
    except IdempotencyKeyReused:
        raise request_id_reused() from None
    return outcome_of_decision(
        decision, args.counted, warnings, args.windows_s, args.hybrid_names, item=item, keys_by=args.keys_by
    )


def _replayed_or_decided(item: CheckItem, args: EngineArgs) -> Decision | FallbackDecision:
    replayed = fallback_replays([item])  # decided while Redis was away: answered as then, not decided again
    if replayed:
        return replayed[0]
    return engine_call(
        lambda store: store.check(item, args.specs),
        fallback=lambda: fallback_check(item, args.counted),
        customer=item.customer,
    )


def check_evaluate(*, principal: ApiPrincipal, item: CheckItem, snapshot: Snapshot) -> CheckOutcome:
    principal.authorize(item.customer, item.operation)
    resolved = check_resolve(principal, item, snapshot)
    if resolved.resolution.action is not None:
        return warned(outcome_of_rule(resolved), resolved)
    return decide(resolved.item, resolved.resolution.limits, resolved.warnings)


def check_batch_evaluate(
    *, principal: ApiPrincipal, items: Sequence[CheckItem], mode: BatchMode, snapshot: Snapshot
) -> list[CheckOutcome]:
    """Every item is authorized before any counter moves; then one engine call decides the rest."""
    for item in items:
        principal.authorize(item.customer, item.operation)
    resolved = [named_resolve(principal, named, snapshot) for named in names_checked(principal, items, snapshot)]
    if mode == "atomic" and any(r.resolution.action == RuleAction.DENY for r in resolved):
        return [_refused_by_rule(r) for r in resolved]
    positions = [index for index, r in enumerate(resolved) if not r.resolution.action]
    try:
        decided = iter(_decide_batch([resolved[index] for index in positions], mode))
    except IdempotencyKeyReused as error:
        raise request_id_reused({str(positions[index]): REUSED for index in error.indexes}) from None
    # Rule decisions are counted only now: a batch refused above consumed nothing, not even usage.
    ruled = {index: warned(outcome_of_rule(r), r) for index, r in enumerate(resolved) if r.resolution.action}
    outcomes = [ruled[index] if index in ruled else next(decided) for index in range(len(items))]
    return batch_rejected(outcomes) if mode == "atomic" else outcomes


def _decide_batch(pending: list[Resolved], mode: BatchMode) -> list[CheckOutcome]:
    """The outcomes of the checks no rule decided, in order, each with its warnings."""
    if not pending:
        return []
    args = [engine_args(check.resolution.limits) for check in pending]
    if any(arg.hybrid for arg in args):
        decided = hybrid_batch([check.item for check in pending], args, mode)
        return [
            outcome_of_decision(
                d, arg.counted, check.warnings, arg.windows_s, arg.hybrid_names, item=check.item, keys_by=arg.keys_by
            )
            for d, check, arg in zip(decided, pending, args, strict=True)
        ]
    pairs = [(check.item, arg.specs) for check, arg in zip(pending, args, strict=True)]
    decisions: Sequence[Decision | FallbackDecision] = fallback_replays([item for item, _ in pairs]) or engine_call(
        lambda store: store.check_batch(pairs, mode),
        fallback=lambda: _degraded_batch(pending, mode),
    )
    decisions_tally(pairs, decisions)
    return [
        outcome_of_decision(d, arg.counted, check.warnings, arg.windows_s, item=check.item, keys_by=arg.keys_by)
        for d, check, arg in zip(decisions, pending, args, strict=True)
    ]


REUSED = {"request_id": ["Already used within the last 10 minutes for a request with other parameters."]}


def request_id_reused(item_fields: dict[str, object] | None = None) -> Unprocessable:
    """The 422 for a request id reused with other parameters (the IETF Idempotency-Key draft, Stripe)."""
    return Unprocessable(
        "This request_id was already used for a different request; send a new id for a new request "
        "(or the same parameters to get the first answer again).",
        code="idempotency_key_reused",
        fields=REUSED if item_fields is None else {"items": item_fields},
    )


def _degraded_batch(pending: list[Resolved], mode: str) -> list[FallbackDecision]:
    """Each item by its limits' policies; an atomic batch is counted all or none (fallback/decide.py)."""
    return fallback_batch([(check.item, check.counted) for check in pending], atomic=mode == "atomic")


def _refused_by_rule(resolved: Resolved) -> CheckOutcome:
    """An atomic batch with an item an access rule denies admits nothing: that item says DENIED, the others
    BATCH_REJECTED (no wait helps either)."""
    denied = resolved.resolution.action == RuleAction.DENY
    if not resolved.item.dry_run:  # usage counts every item as refused by the rule, as before
        decision_ledger.add(decision_counts(resolved.item, "rule_denied", degraded=False, now_ms=_now_ms()))
    return warned(CheckOutcome(False, DENIED if denied else BATCH_REJECTED, None, (), {}), resolved)


unknown_customers = BackgroundRecorder(
    "unknown-customers",
    write=lambda seen: customers_record_seen(external_ids=seen),
    interval_s=lambda: settings.QUOTA_BOOKKEEPING_FLUSH_S,
)
