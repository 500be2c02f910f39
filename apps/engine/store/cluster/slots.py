"""A check over several cluster slots, taken apart and put back together (used by store/cluster.py).

A check keyed by customer lives on its customer's slot ("home": its counters, usage and request id). A per-IP
or global limit beside it lives elsewhere ("away", tagged {i=<ip>} or {n=<limit>}). ClusterStore decides such
a check in steps: each away slot in slot order reserves (check.lua, spending if its limits admit), then home
decides; a refusal anywhere refunds what the earlier steps reserved (refund.lua), so a refused check consumes
nothing. Every step runs at one explicit time, so the windows agree and a refund knows which window or log entry
it gives back; the caller tallies the whole check's usage and records at that time (decided_at_ms).

An away step is a plain check item of check.lua, its usage base one of the away slot (`<prefix>:u:{i=..}:<op>:`,
where a lease would book session time: an away part never holds one, spread.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from redis.crc import key_slot

from apps.engine.keys import IDEMPOTENCY_TTL_MS, enc
from apps.engine.store.plan import ItemPlan, LimitPlan
from apps.engine.types import InvalidCheck

_FINGERPRINT = re.compile(r"\|([0-9a-fA-F]+)$")


class CrossSlotCheck(InvalidCheck):
    """A check the cluster cannot run: a lease on a limit whose counter is not in its customer's slot (spread.py)."""


def slot_of(key: str) -> int:
    return key_slot(key.encode())


def split_plan(prefix: str, plan: ItemPlan) -> tuple[ItemPlan, list[ItemPlan]]:
    """(home part, away parts in slot order): each part holds the limits of one slot, in the plan's order."""
    home_slot = slot_of(plan.usage_base)
    by_slot: dict[int, list[LimitPlan]] = {}
    for limit in plan.limits:
        by_slot.setdefault(slot_of(limit.keys[0]), []).append(limit)
    # Home stores no decision itself: the slots each see only part of it (spread.py stores the whole).
    home = replace(plan, limits=tuple(by_slot.pop(home_slot, ())), idem_key=None)
    aways = []
    for slot in sorted(by_slot):
        limits = tuple(by_slot[slot])
        tag = limits[0].keys[0][len(prefix) + 3 :].split("}", 1)[0] + "}"
        base = f"{prefix}:u:{tag}:{enc(plan.item.operation)}:"
        aways.append(ItemPlan(plan.item, limits, None, base, plan.costs, logged=False))
    return home, aways


def as_dry_run(part: ItemPlan) -> ItemPlan:
    """The same part, only looking (reports its limits, spends and counts nothing)."""
    return replace(part, item=replace(part.item, dry_run=True))


def merged_row(plan: ItemPlan, parts: Sequence[tuple[ItemPlan, list[Any]]], refused: bool) -> list[Any]:
    """check.lua's row for the whole plan from the rows of its parts (see its header)."""
    triples: dict[int, tuple[Any, Any, Any]] = {}
    retry, delay, lease_expiry = 0, 0, 0
    for part, row in parts:
        for n, limit in enumerate(part.limits):
            triples[id(limit)] = (row[4 + 3 * n], row[5 + 3 * n], row[6 + 3 * n])
        if row[0] == 0:
            retry = -1 if row[1] == -1 or retry == -1 else max(retry, row[1])
        else:  # an admitted part's row[1] is its shapers' delay
            delay = max(delay, row[1])
        lease_expiry = max(lease_expiry, row[3])
    allowed = 0 if refused or any(row[0] == 0 for _, row in parts) else 1
    row = [allowed, delay if allowed else retry, 0, lease_expiry if allowed else 0]
    for limit in plan.limits:
        row.extend(triples[id(limit)])
    return row


def refunded_report(part: ItemPlan, row: list[Any]) -> None:
    """Put back into `row` the remaining amounts a refund gave back (its reset times stay as reserved)."""
    for n, limit in enumerate(part.limits):
        if limit.cost > 0 and row[4 + 3 * n] == 0 and not limit.spec.entry.leased:
            row[5 + 3 * n] = min(limit.spec.capacity, row[5 + 3 * n] + limit.cost)


def refund_call(spent: Sequence[tuple[ItemPlan, list[Any]]], now: int | str, at: int) -> tuple[list[str], list[Any]]:
    """KEYS and ARGV of refund.lua giving back what the parts in `spent` (each with its row, which says which
    limits admitted; all on one slot) spent at `at`."""
    keys: list[str] = []
    args: list[Any] = [now, at, 0]
    count = 0
    for part, row in spent:
        for n, limit in enumerate(part.limits):
            spec = limit.spec
            if limit.cost <= 0 or row[4 + 3 * n] == 1 or not spec.entry.refund:
                continue
            index = len(keys) + 1
            keys.extend(limit.keys)
            window = limit.params(at).window
            code = spec.entry.code
            args += [code, index, spec.quantity, spec.period_ms, spec.capacity, window[0], window[1], limit.cost]
            count += 1
    args[2] = count
    return keys, args


@dataclass(slots=True)
class RequestIds:
    """What the request ids of a call say before anything is decided (check.lua's request_ids phase, in Python):
    the positions whose id was stored or used earlier in the call with other parameters (the call is refused);
    {position: the stored decision to replay}; {position: the earlier position of the call it repeats}."""

    reused: list[int] = field(default_factory=list)
    replays: dict[int, str] = field(default_factory=dict)
    repeats: dict[int, int] = field(default_factory=dict)


def request_ids(plans: Sequence[ItemPlan], stored: Sequence[str | None], now: int) -> RequestIds:
    """RequestIds of `plans` (each with a request id; `stored`: what its idempotency key holds), positions in
    `plans`."""
    first_of: dict[str, int] = {}
    found = RequestIds()
    for n, (plan, text) in enumerate(zip(plans, stored, strict=True)):
        key, mine, dry = plan.idem_key or "", plan.fingerprint, plan.item.dry_run
        same = True
        if key in first_of:
            same = plans[first_of[key]].fingerprint == mine
            found.repeats[n] = first_of[key]
        elif text is not None and now - int(text.split("|", 1)[0]) < IDEMPOTENCY_TTL_MS:
            theirs = _FINGERPRINT.search(text)
            same = (theirs is not None and theirs.group(1) == mine) or (theirs is None and not dry)
            found.replays[n] = text
        elif not dry:
            first_of[key] = n
        if not same:
            found.reused.append(n)
    return found


def reused_positions(plans: Sequence[ItemPlan], stored: Sequence[str | None], now: int) -> list[int]:
    """The positions among `plans` (each with a request id; `stored`: what its idempotency key holds) whose id
    was stored or used earlier in the call with other parameters: check.lua's rule, in Python."""
    return request_ids(plans, stored, now).reused
