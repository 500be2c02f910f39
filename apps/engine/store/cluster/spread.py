"""SpreadChecks: ClusterStore's checks over several slots, reserved slot by slot and refunded on rejection.

The steps and why (slots.py has the parts): the request id is looked up first (a replay or a reuse answers before
anything is spent); the time is fixed once (the home node's TIME, or the test clock); each away slot in slot order
runs check.lua, which spends when its limits admit; then home runs check.lua with the lease. A refusal stops the
spending: the away slots after it only look, home only looks, and every slot that spent gets refund.lua. The whole
check's usage is tallied by the caller at that one time (decided_at_ms), like any other. The decision is then stored
under the request id in Python (the scripts of the slots each saw only part of it). Round trips: one per slot, plus
one for the time, one for a request id, one per refunded slot. Between a reservation and its refund another check
may find the counter fuller than it ends up: it may be refused, never admitted beyond the limit.
"""

from __future__ import annotations

from typing import Any

from apps.engine.keys import IDEMPOTENCY_TTL_MS
from apps.engine.store.cluster.slots import (
    CrossSlotCheck,
    as_dry_run,
    merged_row,
    refund_call,
    refunded_report,
    reused_positions,
    slot_of,
    split_plan,
)
from apps.engine.store.operator_tools import _text
from apps.engine.store.plan import ItemPlan
from apps.engine.store.script.args import item_descriptor
from apps.engine.store.script.assembly import assemble
from apps.engine.types import IdempotencyKeyReused

REFUND_SCRIPT = assemble("refund.lua").text


class SpreadChecks:
    """Mixed into ClusterStore (which provides _group_rows, _slot_keys, _layout, _clock, _hint, _client)."""

    def _spread_row(self, client: Any, plan: ItemPlan, position: int) -> tuple[list[Any], int]:
        """check.lua's row for `plan`, whose limits live on several slots (see the module docstring), and the
        time it was decided at."""
        if plan.lease is not None and slot_of(plan.limits[0].keys[0]) != slot_of(plan.usage_base):
            name = plan.limits[0].spec.name
            raise CrossSlotCheck(f"a lease on Redis Cluster must be on a limit keyed by customer ({name} is not)")
        at = self._spread_time(client, plan)
        if plan.idem_key is not None:
            stored = self._stored_decision(client, plan, position, at)
            if stored is not None:
                return stored, at
        home, aways = split_plan(self._layout.prefix, plan)  # type: ignore[attr-defined]
        parts, reserved = self._reserved(client, home, aways, at)
        refused = len(reserved) < len(aways)
        if not plan.item.dry_run and (refused or parts[-1][1][0] == 0):
            self._refund(client, reserved, at)
        row = merged_row(plan, parts, refused)
        if plan.idem_key is not None and not plan.item.dry_run:
            stored_text = f"{at}|{','.join(str(int(value)) for value in row)}|{item_descriptor(plan)}"
            client.set(plan.idem_key, stored_text, px=IDEMPOTENCY_TTL_MS)
        return row, at

    def _reserved(
        self, client: Any, home: ItemPlan, aways: list[ItemPlan], at: int
    ) -> tuple[list[tuple[ItemPlan, list[Any]]], list[tuple[ItemPlan, list[Any]]]]:
        """(each part with its row, home last; the away parts that spent, with their rows): the away slots in
        order, each spending if it admits, until one refuses (the rest, and home, then only look; a dry run
        only looks anyway). All the away slots spent when the second list is as long as `aways`."""
        parts: list[tuple[ItemPlan, list[Any]]] = []
        reserved: list[tuple[ItemPlan, list[Any]]] = []
        refused = False
        for part in [*aways, home]:
            if not part.limits:  # home without limits of its own: nothing to run check.lua for
                parts.append((part, [1, 0, 0, 0]))
                continue
            sent = as_dry_run(part) if refused else part
            answer = self._group_rows(client, [sent], False, *self._slot_keys(sent), now=at)  # type: ignore[attr-defined]
            row = answer[0]  # no request id in a part: the answer is its row, then the script's now
            parts.append((part, row))
            if part is not home and not refused:
                refused = row[0] == 0
                if not refused:
                    reserved.append((part, row))
        return parts, reserved

    def _spread_time(self, client: Any, plan: ItemPlan) -> int:
        if self._clock is not None:  # type: ignore[attr-defined]
            return int(self._clock.now_ms())  # type: ignore[attr-defined]
        node = client.get_node_from_key(plan.usage_base)
        seconds, micros = client.time(target_nodes=node)
        return int(seconds) * 1000 + int(micros) // 1000

    def _stored_decision(self, client: Any, plan: ItemPlan, position: int, at: int) -> list[Any] | None:
        """The stored decision to replay ({-1, stored}), IdempotencyKeyReused, or None (not decided yet)."""
        text = client.get(plan.idem_key)
        stored = _text(text) if text else None
        if reused_positions([plan], [stored], at):
            raise IdempotencyKeyReused((position,))
        if stored is not None and at - int(stored.split("|", 1)[0]) < IDEMPOTENCY_TTL_MS:
            return [-1, stored]
        return None

    def _refund(self, client: Any, spent: list[tuple[ItemPlan, list[Any]]], at: int) -> None:
        """refund.lua on each slot that spent; its row then reports what is left after the refund."""
        now = self._now_arg()  # type: ignore[attr-defined]
        for part, row in spent:
            keys, args = refund_call([(part, row)], now, at)
            if keys:  # a cluster routes a call by its keys: one without any has nothing to give back anyway
                client.eval(REFUND_SCRIPT, len(keys), *keys, *args)
            refunded_report(part, row)
