"""RedisStore's short path: a check of one shape, decided by the script made for that shape (script/shapes.py).

One call with a few numbers (packed doubles), against check.lua's general call: no plan of the item (usage
keys, request fingerprint, definitions), no JSON. On one Redis server the shape is a Redis Function (FCALL; its
functions are made once, not on every call); on a Redis Cluster, and on a server without Functions (before 7.0),
it is a script (EVALSHA), which every node loads on its own NOSCRIPT.

`decide` answers None when the check is not for this path (a request id, a dry run, a shape check.lua must decide)
or when the script handed over (a durable counter to rebuild); the store then asks check.lua, so every check is
decided exactly once.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

from apps.engine.deadline import DeadlineFunction, DeadlineScript, deadline_arg, raise_if_deadline
from apps.engine.keys import KeyLayout
from apps.engine.limit_spec import LimitSpec
from apps.engine.reference.zoned_windows import window_bounds
from apps.engine.store.answers import answer_code, answer_now
from apps.engine.store.plan import limit_cost
from apps.engine.store.script.assembly import Assembled, locate
from apps.engine.store.script.check_fields import HANDOVER
from apps.engine.store.script.shapes import MAX_SHAPES, Shape, shape_library, shape_of, shape_script
from apps.engine.store.stored_decisions import row_decision
from apps.engine.types import CheckItem, Decision, LimitResult

# The keys to send after the counters (a shape that rebuilds: the epoch and warm keys of the call's slot), given
# the first item, every counter key and whether the shape rebuilds; None when the checks cannot be one call on this
# store (on a Redis Cluster, keys that hash to several slots).
ExtraKeys = Callable[[CheckItem, list[str], bool], list[str] | None]
Caller = DeadlineScript | DeadlineFunction
MAX_PLANS = 1024
UNKNOWN_COMMAND = "unknown command"  # a Redis before 7.0 answering FCALL


class _Plan:
    """What every check of one tuple of limits shares: its shape's script and the limits' fixed numbers."""

    __slots__ = ("constants", "script", "shape", "specs")

    def __init__(self, specs: Sequence[LimitSpec], shape: Shape, script: Caller) -> None:
        self.specs = specs
        self.shape = shape
        self.script = script
        self.constants = [n for spec in specs for n in (spec.quantity, spec.period_ms, spec.capacity, int(spec.shadow))]


class ShapedChecks:
    """The shaped scripts of one store: `decide` checks in one call when their shape allows."""

    def __init__(self, client: Any, layout: KeyLayout, rebuilds: bool, extra_keys: ExtraKeys | None) -> None:
        """extra_keys: None = never shaped (every check goes to check.lua)."""
        self._client = client
        self._layout = layout
        self._rebuilds = rebuilds
        self._extra_keys = extra_keys
        self._functions = not hasattr(client, "get_default_node")  # a Redis Cluster client has it
        self._scripts: dict[Shape, tuple[Caller, Assembled]] = {}
        # By id of the limits tuple, holding it (so the id is not reused while the entry lives); None: check.lua.
        self._plans: dict[int, tuple[Sequence[LimitSpec], _Plan | None]] = {}

    def decide(
        self, items: Sequence[CheckItem], specs: Sequence[LimitSpec], now: int | str, hint_ms: int, client: Any = None
    ) -> list[Decision] | None:
        """The decisions of `items`, each against the same `specs`, in order and in one call (an independent batch;
        one item: a check); None when check.lua must decide them. now: the test clock's ms, or '' for Redis TIME;
        hint_ms: this host's clock, to pick calendar windows; client: the one to send it on (default the store's)."""
        if self._extra_keys is None or any(item.request_id is not None or item.dry_run for item in items):
            return None
        plan = self._plan(specs)
        if plan is None:
            return None
        layout, keys, numbers = self._layout, [], list(plan.constants)
        for item in items:
            for spec in plan.specs:
                keys.append(layout.counter_keys(spec, item)[0])
                numbers.append(limit_cost(spec, item))
                if spec.entry.calendar_windows:
                    numbers += window_bounds(hint_ms, item.timezone, spec.calendar_period or "")
        extra = self._extra_keys(items[0], keys, plan.shape.rebuilds)
        if extra is None:
            return None
        rows = self._call(plan, [*keys, *extra], [now, struct.pack(f"<{len(numbers)}d", *numbers)], client)
        if answer_code(rows) == HANDOVER:
            return None
        decided, decided_at = answer_now(rows)
        return [self._decision(plan.specs, row, decided_at) for row in decided]

    @staticmethod
    def _decision(specs: Sequence[LimitSpec], row: list[Any], decided_at: int) -> Decision:
        results = tuple(
            LimitResult(s.name, s.algorithm, s.unit, s.quantity, row[n + 1], row[n + 2], s.shadow, row[n] == 1)
            for s, n in zip(specs, range(4, len(row), 3), strict=True)
        )
        return row_decision(row, results, False, decided_at)

    def _call(self, plan: _Plan, keys: list[str], args: list[Any], client: Any = None) -> list[list[Any]]:
        client = client or self._client
        caller, assembled = self._scripts[plan.shape]
        try:
            if isinstance(caller, DeadlineFunction):
                rows: list[list[Any]] = caller(keys, args, client)
                return rows
            try:
                rows = client.evalsha(caller.sha, len(keys), *keys, *args, deadline_arg(client))
            except NoScriptError:  # Redis restarted or SCRIPT FLUSH: load it and run it (what redis-py's Script does)
                rows = caller(keys=keys, args=args, client=client)
        except ResponseError as error:
            if isinstance(caller, DeadlineFunction) and UNKNOWN_COMMAND in str(error):
                return self._call(self._by_scripts(plan), keys, args, client)
            raise_if_deadline(error)
            locate(error, assembled)
            raise
        return rows

    def _by_scripts(self, plan: _Plan) -> _Plan:
        """`plan` by a script: the server has no Functions (before Redis 7.0), so neither will later checks."""
        self._functions = False
        self._scripts.clear()
        self._plans.clear()
        self._scripts[plan.shape] = self._caller(plan.shape)
        return _Plan(plan.specs, plan.shape, self._scripts[plan.shape][0])

    def _plan(self, specs: Sequence[LimitSpec]) -> _Plan | None:
        entry = self._plans.get(id(specs))
        if entry is not None and entry[0] is specs:
            return entry[1]
        plan = self._new_plan(specs)
        if type(specs) is tuple:  # the engine args' tuples live as long as their snapshot: worth keeping
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            self._plans[id(specs)] = (specs, plan)
        return plan

    def _new_plan(self, specs: Sequence[LimitSpec]) -> _Plan | None:
        shape = shape_of(specs, self._rebuilds)
        if shape is None:
            return None
        if shape not in self._scripts:
            if len(self._scripts) >= MAX_SHAPES:
                return None  # a rare shape: check.lua
            self._scripts[shape] = self._caller(shape)
        return _Plan(tuple(specs), shape, self._scripts[shape][0])

    def _caller(self, shape: Shape) -> tuple[Caller, Assembled]:
        if self._functions:
            name, library = shape_library(shape)
            return DeadlineFunction(name, library.text), library
        script = shape_script(shape)
        return DeadlineScript(self._client, script.text), script
