"""Which limit a durable counter belongs to, read back from its name, for the warm-up (warm_up.py).

The per-counter seeding is handed the limit by the check that met the counter; the warm-up has only the counter's
name in its records (`c:{<tag>}:<alg>:<name>[:<component>]*`, keys.py). So it takes the limits of that name in the
config snapshot, each as it applies to the counter's customer (the override in force for its resource and
attributes, as a check resolves it), and keeps the one whose key for the counter's components is the counter's own
name: same algorithm, period, key_by, so the same key a check would use. A calendar counter takes its customer's
time zone; a calendar counter not keyed by customer (its window follows whichever customer checks) takes the window
its latest record started, so what was spent in it is never dropped.

What cannot be matched (the limit was deleted or changed so that checks use another key, or is no longer durable) is
skipped: no check uses that key any more.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from urllib.parse import unquote

from apps.enforcement.decisions.specs import limit_spec_of
from apps.engine.durability import History, reach_ms
from apps.engine.keys import KeyLayout
from apps.engine.limit_spec import LimitSpec
from apps.engine.reference.base import Params
from apps.engine.reference.zoned_windows import window_bounds
from apps.engine.store.plan import LimitPlan
from apps.engine.types import CheckItem
from apps.limits.resolution import DEFAULT_TIMEZONE, limit_effective
from apps.limits.snapshot import CustomerConfig, LimitConfig, OverrideConfig, Snapshot

_FIELDS = {"c": "customer", "r": "resource", "i": "ip", "s": "service", "k": "api_key"}
ANYONE = "-"  # the customer of a check item built for a counter keyed by nothing of a customer's


class CounterSpecs:
    """Resolves counters of one store (its key layout) against one snapshot at one time."""

    def __init__(self, snapshot: Snapshot, layout: KeyLayout, now_ms: int) -> None:
        self._snapshot = snapshot
        self._layout = layout
        self.now_ms = now_ms
        self._by_name: dict[str, list[LimitConfig]] = defaultdict(list)
        self._shapes: dict[tuple[object, ...], LimitSpec | None] = {}
        for limits in snapshot.limits_by_operation.values():
            for limit in limits:
                if limit not in self._by_name[limit.name]:
                    self._by_name[limit.name].append(limit)

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def resolve(self, counter: str, history: History) -> tuple[LimitSpec, Params] | None:
        """(the durable limit `counter` belongs to, its parameters now), or None when no configured limit uses it."""
        head, rest = counter.split("}:", 1)
        parts = rest.split(":")
        name = unquote(parts[1])
        item = _item_of(head, parts[2:])
        if item is None:
            return None
        customer = self._snapshot.customers.get(item.customer) if item.customer != ANYONE else None
        overrides = self._snapshot.overrides_by_customer.get(item.customer, ())
        # Counters of one shape (limit, algorithm, key_by, plan, no override of their own) share their limit: it is
        # matched once per shape, not once per counter (most of a 100k-counter warm-up's time otherwise).
        shape = tuple(part.split("=", 1)[0].removesuffix("-") for part in parts[2:])
        own = (item.customer, item.resource, tuple(sorted(item.attributes.items()))) if overrides else None
        cache_key = (head.split("{", 1)[1][:2], parts[0], name, shape, customer.plan if customer else None, own)
        if cache_key not in self._shapes:
            self._shapes[cache_key] = self._matched(counter, name, item, customer, overrides)
        spec = self._shapes[cache_key]
        if spec is None:
            return None
        return spec, self._params(spec, customer.timezone if customer else None, history)

    def _matched(
        self,
        counter: str,
        name: str,
        item: CheckItem,
        customer: CustomerConfig | None,
        overrides: tuple[OverrideConfig, ...],
    ) -> LimitSpec | None:
        for config in self._by_name.get(name, ()):
            if customer is not None and config.plan not in (None, customer.plan):
                continue
            effective = limit_effective(
                config, overrides, resource=item.resource, attributes=item.attributes, now_ms=self.now_ms
            )
            if effective is None:  # unlimited for this customer: never spent on
                continue
            spec = limit_spec_of(effective)
            if not spec.durable or self._layout.counter_id(self._layout.counter_keys(spec, item)[0]) != counter:
                continue
            return spec
        return None

    def _params(self, spec: LimitSpec, timezone: str | None, history: History) -> Params:
        if not spec.entry.calendar_windows:
            return LimitPlan(spec, (), 0).params(self.now_ms)
        bounds = window_bounds(self.now_ms, timezone or DEFAULT_TIMEZONE, spec.calendar_period or "")
        params = LimitPlan(spec, (), 0, bounds).params(self.now_ms)
        if timezone is None:
            started = [start for start, _ in history if start <= self.now_ms]
            latest = max(started, default=params.window[0])
            if latest != params.window[0] and self.now_ms < latest + reach_ms(spec):
                return dataclasses.replace(params, window=(latest, latest + reach_ms(spec)))
        return params


def _item_of(head: str, components: Sequence[str]) -> CheckItem | None:
    """A check item with the counter's components (customer, resource, ..., attributes), or None if unreadable."""
    fields: dict[str, str] = {}
    attributes: dict[str, str] = {}
    for component in components:
        if component.startswith("a."):
            attr, equals, value = component[2:].partition("=")
            if equals:
                attributes[unquote(attr)] = unquote(value)
            elif not attr.endswith("-"):
                return None
            continue
        kind, equals, value = component.partition("=")
        if not equals or kind not in _FIELDS:
            return None
        fields[_FIELDS[kind]] = unquote(value)
    tag = head.split("{", 1)[1]
    if tag.startswith("c=") and "customer" not in fields:
        return None
    customer = fields.pop("customer", ANYONE) or ANYONE
    if tag.startswith("i=") and "ip" not in fields:
        return None
    return CheckItem(
        customer,
        "warm-up",
        resource=fields.get("resource", ""),
        attributes=attributes,
        ip=fields.get("ip", ""),
        service=fields.get("service", ""),
        api_key=fields.get("api_key", ""),
    )
