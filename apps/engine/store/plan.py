"""A check compiled for a store: keys, per-limit costs and calendar bounds, validated up front."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from apps.engine.keys import KeyLayout
from apps.engine.limit_spec import LimitSpec
from apps.engine.reference.base import Params
from apps.engine.reference.zoned_windows import pick_window, window_bounds
from apps.engine.registry import LEASE_SET
from apps.engine.types import BATCH_MODES, REQUESTS, CheckItem, InvalidCheck


@dataclass(slots=True)
class LimitPlan:
    """One limit of one check: where its state lives and what the check costs it."""

    spec: LimitSpec
    keys: tuple[str, ...]
    cost: int
    bounds: tuple[int, ...] = ()
    counter: str = ""  # durable limits: the counter key without the prefix, as its records name it

    def params(self, now: int) -> Params:
        """The model parameters at `now` (calendar: the window among `bounds` containing now)."""
        spec = self.spec
        window = pick_window(self.bounds, now) if self.bounds else (0, 0)
        return Params(spec.quantity, spec.period_ms, spec.capacity, window)


@dataclass(slots=True)
class ItemPlan:
    """One check: its limits (the leased one first), idempotency and usage keys, optional lease."""

    item: CheckItem
    limits: tuple[LimitPlan, ...]
    idem_key: str | None
    usage_base: str
    costs: tuple[tuple[str, int], ...]
    lease: tuple[str, int] | None = None
    lease_id: str | None = None
    fingerprint: str = ""  # items with a request id: request_fingerprint
    lease_record_key: str = ""  # leases: where the lease's record goes (keys.py, store/sessions.py)
    logged: bool = True  # False: its decisions are not logged (a Redis Cluster slot's part of a check, slots.py)

    def lease_payload(self) -> str:
        """What check.lua's fragments receive for a lease: "<member>\n<record key>\n<record body>"."""
        if self.lease is None:
            return ""
        return f"{self.lease[0]}\n{self.lease_record_key}\n{record_body(self)}"

    def session_limits(self) -> tuple[LimitPlan, ...]:
        """The limits counting session time (lease_clock) the lease of this item counts against."""
        return tuple(limit for limit in self.limits if limit.spec.entry.counts_time)


def record_body(plan: ItemPlan) -> str:
    """A lease record without its start: "<usage base>\n(<key>\n<seconds>\n<period ms>\n<shadow 0|1>\n)*".

    Renewing and releasing the lease read it (lua/lease_renew.lua, lease_release.lua): a renewal is judged by
    the session_time limits as they were when the lease was acquired.
    """
    lines = [plan.usage_base]
    for limit in plan.session_limits():
        lines += (limit.keys[0], str(limit.spec.quantity), str(limit.spec.period_ms), str(int(limit.spec.shadow)))
    return "\n".join(lines) + "\n"


_ONE_REQUEST = ((REQUESTS, 1),)
FINGERPRINT_LENGTH = 16  # hex digits; check.lua reads a stored fingerprint as the last ones of its decision
_canonical_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def usage_costs(item: CheckItem) -> tuple[tuple[str, int], ...]:
    """The non-zero costs of `item` per unit, requests included (1 unless given)."""
    if not item.costs:
        return _ONE_REQUEST
    costs = dict(item.costs)
    costs.setdefault(REQUESTS, 1)
    return tuple((unit, cost) for unit, cost in sorted(costs.items()) if cost > 0)


def request_fingerprint(item: CheckItem, costs: tuple[tuple[str, int], ...], lease_ms: int | None) -> str:
    """What a request id promises to repeat: operation, resource, attributes, costs (as usage_costs, so an
    absent "requests" is 1 and a zero cost is no cost), dry run, lease ttl, the wait budget (max_wait_ms) and the
    caller (service and API key prefix), hashed to 64 bits.

    The customer is in the idempotency key itself; the ip and the limits that apply are not the request's
    parameters (a retry may come through another proxy, after a limit changed). The caller is: ids are per
    customer, and another service or key reusing one (with limits keyed by service or key, a decision it never
    paid for) is another request. The stored decision is replayed only to the same fingerprint (check.lua,
    decide.py, the hybrid path's stored decisions and the database fallback alike).
    """
    lease = -1 if lease_ms == 0 else lease_ms or 0  # an allocation is not a check
    attributes = sorted(item.attributes.items())
    canonical = _canonical_json(
        [
            item.operation,
            item.resource,
            attributes,
            costs,
            item.dry_run,
            lease,
            item.max_wait_ms,
            item.service,
            item.api_key,
        ]
    )
    return hashlib.blake2b(canonical.encode(), digest_size=FINGERPRINT_LENGTH // 2).hexdigest()


def limit_cost(spec: LimitSpec, item: CheckItem) -> int:
    """What `item` spends on `spec`: its cost in the limit's unit ("requests": 1 unless given)."""
    if not item.costs:
        return int(spec.unit == REQUESTS)
    return item.costs.get(spec.unit, 1 if spec.unit == REQUESTS else 0)


def _limit_plan(layout: KeyLayout, item: CheckItem, spec: LimitSpec, now_hint: int) -> LimitPlan:
    keys = layout.counter_keys(spec, item)
    if spec.entry.leased:  # a check only looks; a lease holds
        return LimitPlan(spec, keys, 1)
    cost = limit_cost(spec, item)
    counter = layout.counter_id(keys[0]) if spec.durable else ""
    if spec.entry.calendar_windows:
        bounds = window_bounds(now_hint, item.timezone, spec.calendar_period or "")
        return LimitPlan(spec, keys, cost, bounds, counter)
    return LimitPlan(spec, keys, cost, counter=counter)


def plan_item(
    layout: KeyLayout, item: CheckItem, limits: Sequence[LimitSpec], now_hint: int, lease_ms: int | None = None
) -> ItemPlan:
    """Compile `item` against `limits`; with lease_ms, limits[0] (the lease set's limit) is leased (lease_ms 0: an
    allocation, held until released, which counts no session time)."""
    if len(limits) > 1 and len({spec.name for spec in limits}) != len(limits):
        raise InvalidCheck("limit names must be unique within a check")
    plans = tuple([_limit_plan(layout, item, spec, now_hint) for spec in limits])
    plan = ItemPlan(item, plans, layout.idempotency_key(item), layout.usage_base(item), usage_costs(item))
    if lease_ms is not None:
        if not limits or not limits[0].entry.holds_leases:
            raise InvalidCheck(f"a lease is taken on a {LEASE_SET.label} limit")
        if not 0 <= lease_ms <= 10**12:
            raise InvalidCheck("a lease needs a positive ttl")
        if lease_ms == 0 and any(spec.entry.counts_time for spec in limits):
            raise InvalidCheck("an allocation (held until released) cannot count session time")
        plan.lease_id, member = layout.new_lease(plans[0].keys[0], item.customer)
        plan.lease = (member, lease_ms)
        plan.lease_record_key = layout.lease_record_key(plans[0].keys[0], member)
    if plan.idem_key is not None:
        plan.fingerprint = request_fingerprint(item, plan.costs, lease_ms)
    return plan


def check_mode(mode: str) -> bool:
    """Validate a batch mode; True when atomic."""
    if mode not in BATCH_MODES:
        raise InvalidCheck(f"unknown batch mode {mode!r}")
    return mode == "atomic"


def lease_ttl_ms(ttl_s: int | None) -> int:
    """A lease ttl in milliseconds (None: an allocation, 0); refuses anything but a positive whole number of seconds."""
    if ttl_s is None:
        return 0
    if type(ttl_s) is not int or not 1 <= ttl_s <= 10**9:
        raise InvalidCheck("ttl_s must be a positive integer number of seconds")
    return ttl_s * 1000
