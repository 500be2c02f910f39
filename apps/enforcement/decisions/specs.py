"""From a limit in the config snapshot to what the engine evaluates."""

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from django.conf import settings

from apps.engine import LimitSpec
from apps.engine.durability import reach_ms
from apps.engine.keys import limit_name_of
from apps.limits.algorithms import HYBRID_ALGORITHMS, holds_leases
from apps.limits.models import Mode
from apps.limits.resolution import apply_override
from apps.limits.snapshot import LimitConfig, Snapshot
from apps.limits.snapshot_holder import snapshot_current

CALENDAR_WINDOW_S = {"day": 86400, "week": 604800, "month": 2592000}


@functools.lru_cache(maxsize=8192)
def limit_spec_of(config: LimitConfig) -> LimitSpec:
    spec = LimitSpec(
        name=config.name,
        algorithm=config.algorithm,
        quantity=config.quantity,
        period_s=config.period_s,
        calendar_period=config.calendar_period,
        burst=config.burst,
        unit=config.unit,
        key_by=config.key_by,
        shadow=config.mode == Mode.SHADOW,
        audit=config.audit,
    )
    return dataclasses.replace(spec, durable=durable(spec))


def durable(spec: LimitSpec) -> bool:
    """Every limit whose counter can be rebuilt after a Redis loss is (apps/engine/durability.py): calendar
    quotas, and windows, logs and buckets of a minute or longer, whatever their key and match, as long as
    their records reach back no further than they are kept (QUOTA_COUNTER_RECORD_DAYS)."""
    return spec.can_be_durable and reach_ms(spec) <= _kept_ms()


def counter_reach_ms(counter: str) -> int:
    """How long after its bucket a record of durable `counter` (a key without prefix) can still shape it: its
    limit's reach under the longest-reaching override, or as long as records are kept when the limit is gone."""
    return _reaches(snapshot_current()).get(limit_name_of(counter), _kept_ms())


_reach_cache: tuple[Snapshot | None, dict[str, int]] = (None, {})


def _reaches(snapshot: Snapshot) -> dict[str, int]:
    """Limit name -> reach of its durable forms, computed once per snapshot (snapshots are immutable)."""
    global _reach_cache
    if _reach_cache[0] is not snapshot:
        reaches: dict[str, int] = {}
        for spec in _limit_forms(snapshot):
            if spec.durable:
                reaches[spec.name] = max(reaches.get(spec.name, 0), reach_ms(spec))
        _reach_cache = (snapshot, reaches)
    return _reach_cache[1]


def _limit_forms(snapshot: Snapshot) -> list[LimitSpec]:
    """Every limit as configured and as each override changes it for its customer."""
    by_name = {limit.name: limit for limits in snapshot.limits_by_operation.values() for limit in limits}
    overridden = [
        apply_override(by_name[override.limit], override)
        for overrides in snapshot.overrides_by_customer.values()
        for override in overrides
        if override.limit in by_name
    ]
    configs = [*by_name.values(), *overridden]
    return [limit_spec_of(config) for config in configs if config is not None]


def _kept_ms() -> int:
    return int(settings.QUOTA_COUNTER_RECORD_DAYS * 86_400_000)


def window_seconds(config: LimitConfig) -> int:
    return CALENDAR_WINDOW_S[config.calendar_period] if config.calendar_period else config.period_s or 0


def keys_by_of(limits: Sequence[LimitConfig]) -> Mapping[str, tuple[str, ...]]:
    """Limit name -> its key_by (read-only): which of a check's values made each limit's counter."""
    return MappingProxyType({limit.name: limit.key_by for limit in limits})


@dataclass(frozen=True, slots=True)
class EngineArgs:
    """What a check of some limits passes to the engine, and what its answer needs back."""

    counted: tuple[LimitConfig, ...]  # concurrency limits are spent by leases, not by checks
    specs: tuple[LimitSpec, ...]  # of the counted limits Redis decides (all but the hybrid ones)
    windows_s: Mapping[str, int]  # read-only: shared by every check of the same limits
    exact: tuple[LimitConfig, ...] = ()  # the counted limits Redis decides, in `counted`'s order
    hybrid: tuple[LimitConfig, ...] = ()  # the counted limits with sync_ms (enforcement/hybrid/counting.py)
    hybrid_specs: tuple[LimitSpec, ...] = ()
    hybrid_names: frozenset[str] = frozenset()
    # read-only, like windows_s: each counted limit's key_by, which names whose counter an answer's limit is
    keys_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


# By id of the limits tuple, each entry holding that tuple, so an id is not reused while its entry lives. Resolution
# hands most checks the snapshot's own tuple of an operation's limits (resolution.limits_of_plan), so a worker
# prepares these once per operation and snapshot; tuples built per check (overrides, matches) miss and are bounded.
_engine_args: dict[int, tuple[tuple[LimitConfig, ...], EngineArgs]] = {}
MAX_ENGINE_ARGS = 1024


def engine_args(limits: Sequence[LimitConfig]) -> EngineArgs:
    entry = _engine_args.get(id(limits))
    if entry is not None and entry[0] is limits:
        return entry[1]
    counted = tuple(limit for limit in limits if not holds_leases(limit.algorithm))
    hybrid = tuple(limit for limit in counted if limit.sync_ms is not None and limit.algorithm in HYBRID_ALGORITHMS)
    exact = tuple(limit for limit in counted if limit not in hybrid) if hybrid else counted
    args = EngineArgs(
        counted,
        tuple(limit_spec_of(limit) for limit in exact),
        MappingProxyType({limit.name: window_seconds(limit) for limit in counted}),
        exact,
        hybrid,
        tuple(limit_spec_of(limit) for limit in hybrid),
        frozenset(limit.name for limit in hybrid),
        keys_by_of(counted),
    )
    if type(limits) is tuple:
        if len(_engine_args) >= MAX_ENGINE_ARGS:
            _engine_args.clear()  # new snapshots or many overridden tuples: start over
        _engine_args[id(limits)] = (limits, args)
    return args
