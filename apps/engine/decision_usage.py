"""What one decision adds to usage, read from the decision itself: the rule the process that decided tallies by.

Stores keep counters only; the caller counts each decision a store made (apps/enforcement/ledger/tally.py in the
platform, tests' books in tests/engine), whichever script or store made it, from the item, the limit specs in the
order the store got them, and the Decision, at the decision's own time (decided_at_ms, the store's clock):
- allowed or denied; shadow_denied when an admitted check was over a shadow limit;
- logged: one per audited limit (one decision log entry each, allowed or denied: store/logbook.py);
- the admitted costs per unit (plan.usage_costs: requests is 1 unless given);
- what an admitted check spent on each durable counter that admitted it (a shadow limit over it spent nothing; a
  lease's limits are never durable), in the bucket of the decision's time (durability.record_bucket): the records
  a lost counter is rebuilt from.
Dry runs and replays add nothing. Pure and small: it runs once per decision on the hot path.
"""

from __future__ import annotations

from collections.abc import Sequence

from apps.engine.durability import record_bucket
from apps.engine.keys import KeyLayout
from apps.engine.limit_spec import LimitSpec
from apps.engine.reference.base import Params
from apps.engine.reference.zoned_windows import window_bounds
from apps.engine.store.plan import usage_costs
from apps.engine.types import CheckItem, Decision

# ((counter key without the store prefix, bucket start ms), amount)
Record = tuple[tuple[str, int], int]
# (allowed, shadow_denied, logged, costs per unit, records)
Usage = tuple[bool, bool, int, tuple[tuple[str, int], ...], list[Record]]
_NONE: tuple[tuple[str, int], ...] = ()
_layout = KeyLayout("usage")  # only counter ids are taken from it: a counter key without its prefix
_MAX_CACHED = 4096
_shapes: dict[int, tuple[Sequence[LimitSpec], tuple[int, bool]]] = {}
_buckets: dict[tuple[int, str, int], tuple[LimitSpec, int]] = {}


def decision_usage(item: CheckItem, specs: Sequence[LimitSpec], decision: Decision, now: int) -> Usage | None:
    """What `decision` on `item` against `specs` adds to usage at `now` (the module docstring); None for a dry run or
    a replay."""
    if item.dry_run or decision.replayed:
        return None
    logged, durable = _shape(specs)
    if not decision.allowed:
        return False, False, logged, _NONE, []
    shadow = False
    for result in decision.limits:
        if result.over and result.shadow:
            shadow = True
            break
    records = _records(item, specs, decision, now) if durable else []
    return True, shadow, logged, usage_costs(item), records


def _shape(specs: Sequence[LimitSpec]) -> tuple[int, bool]:
    """(how many of `specs` are audited, whether any is durable): remembered per specs tuple (the platform passes the
    same tuple for every check of an operation, decisions/specs.py), worked out for any other sequence."""
    held = _shapes.get(id(specs))
    if held is not None and held[0] is specs:
        return held[1]
    shape = sum(1 for spec in specs if spec.audit), any(spec.durable for spec in specs)
    if isinstance(specs, tuple):
        if len(_shapes) >= _MAX_CACHED:
            _shapes.clear()
        _shapes[id(specs)] = (specs, shape)
    return shape


def record_start(spec: LimitSpec, item: CheckItem, now_ms: int) -> int:
    """The bucket a check of `item` at `now_ms` records its spending on durable `spec` in (a calendar limit's window is
    the one of the item's time zone holding now). Buckets and windows start on whole seconds (periods are whole
    seconds, minute buckets whole minutes, time zones' offsets whole minutes), so the answer is remembered per spec,
    time zone and second."""
    zone = item.timezone if spec.calendar_period else ""
    key = (id(spec), zone, now_ms // 1000)
    held = _buckets.get(key)
    if held is not None and held[0] is spec:
        return held[1]
    start = _record_start(spec, item, now_ms)
    if len(_buckets) >= _MAX_CACHED:
        _buckets.clear()
    _buckets[key] = (spec, start)
    return start


def _record_start(spec: LimitSpec, item: CheckItem, now_ms: int) -> int:
    window = (0, 0)
    if spec.calendar_period:
        bounds = window_bounds(now_ms, item.timezone, spec.calendar_period)
        window = (bounds[1], bounds[2])
    return record_bucket(spec, Params(spec.quantity, spec.period_ms, spec.capacity, window), now_ms)


def _records(item: CheckItem, specs: Sequence[LimitSpec], decision: Decision, now: int) -> list[Record]:
    records = []
    for spec, result in zip(specs, decision.limits, strict=True):
        if not spec.durable or result.over:
            continue
        cost = item.cost_of(spec.unit)
        if cost > 0:
            counter = _layout.counter_id(_layout.counter_keys(spec, item)[0])
            records.append(((counter, record_start(spec, item, now)), cost))
    return records
