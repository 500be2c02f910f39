"""AtomicSlots: ClusterStore's atomic batches over several slots, all or nothing: reserved slot by slot, refunded
on refusal (the same parts as a check over several slots, slots.py and spread.py).

The steps and why:
1. The time is fixed once (the first item's node's TIME, or the test clock): every slot decides at it, so the
   windows agree and a refund knows which window or log entry it gives back; the caller tallies usage and records
   at that time (decided_at_ms), as for any decision.
2. Request ids are read first (one MGET over the slots): an id reused with other parameters refuses the whole
   batch before anything is spent (IdempotencyKeyReused); a stored decision is replayed, an item repeating an
   earlier one's id answers that item's row (check.lua's rules, slots.request_ids). The scripts are sent no ids:
   a slot sees only part of the batch, so the decisions are stored here once the batch is decided.
3. Each item is split into its parts per slot (one part for an item keyed by customer), and each slot, in slot
   order, runs check.lua in atomic mode on its parts, in the batch's order: it spends only when every part on it
   is admitted. A refusal on slot k stops the spending: slots 1..k-1 get refund.lua (one pipeline), then every
   slot but k runs in look mode (check.lua 'l': atomic, then refused whole, saving nothing; one pipeline), which
   reports what each part sees and the wait its slot needs, so every refused item reports what it saw, as on one
   Redis. The batch's retry is the longest of the slots' (-1 when one can never pass).
4. The decisions are stored under their request ids (one SET per id, pipelined), and the decision log's allow or
   deny entries of the audited limits are written (one XADD per entry, pipelined; check.lua writes them itself on
   one slot, but a slot here cannot know the batch's outcome when it decides its part).
So a refused batch leaves every counter as it found it and the caller tallies no usage for it; an admitted one
spent on every slot. Round trips: one per slot up to the refusal (in turn), plus the time, the request ids and
the log when there are some, and on a refusal two per node (the refunds, the looks). Between a reservation and its
refund another check may find a counter fuller than it ends up: it may be refused, never admitted beyond the
limit. Not atomic against Redis failing midway: the slots already reserved are refunded before the error goes up
(the failure policies then answer), unless Redis fails for those too; an error once every slot has decided
(storing the ids, logging) goes up too, and what the slots spent stays spent. Two concurrent requests with one new
request id may both be decided (the id is claimed only when the batch is decided), as for a check over several
slots.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from apps.engine.decision_log import LOG_TTL_MS, decision_fields, log_key_of
from apps.engine.keys import IDEMPOTENCY_TTL_MS
from apps.engine.store.answers import answer_now
from apps.engine.store.cluster.slots import RequestIds, merged_row, refund_call, request_ids, slot_of, split_plan
from apps.engine.store.cluster.spread import REFUND_SCRIPT
from apps.engine.store.logbook import item_entries
from apps.engine.store.operator_tools import _text
from apps.engine.store.plan import ItemPlan
from apps.engine.store.script.args import item_descriptor
from apps.engine.store.script.check_fields import LOOK_ONLY, REPLAYED
from apps.engine.types import IdempotencyKeyReused

Part = tuple[int, ItemPlan]  # (the item's position in the batch, its part on one slot)
Row = list[Any]


class AtomicSlots:
    """Mixed into ClusterStore (which provides _group_rows, _slot_keys, _spread_time, _now_arg, _layout, _log)."""

    def _atomic_rows(self, client: Any, plans: list[ItemPlan]) -> tuple[list[Row], list[int]]:
        """check.lua's row for each plan of an atomic batch whose keys live on several slots (the module
        docstring), and the time each was decided at."""
        at = self._spread_time(client, plans[0])  # type: ignore[attr-defined]
        ids = self._request_ids(client, plans, at)
        live = [i for i in range(len(plans)) if i not in ids.replays and i not in ids.repeats]
        # The scripts store no decision and log nothing: each slot sees only part of the batch (step 4).
        bare = {i: replace(plans[i], idem_key=None, logged=False) for i in live}
        slots = _slot_parts(self._layout.prefix, bare)  # type: ignore[attr-defined]
        found = self._decided_slots(client, slots, at)
        refused = any(row[0] == 0 for rows in found.values() for row in rows)
        retry = _batch_retry(found) if refused else 0
        parts_of: dict[int, list[tuple[ItemPlan, Row]]] = {i: [] for i in live}
        for slot, parts in slots.items():
            for (position, part), row in zip(parts, found[slot], strict=True):
                parts_of[position].append((part, row))
        rows: list[Row] = [[] for _ in plans]
        for position, text in ids.replays.items():
            rows[position] = [REPLAYED, text]
        for i in live:
            row = merged_row(bare[i], parts_of[i] or [(bare[i], [1, 0, 0, 0])], refused)
            if refused:
                row[1] = retry
            rows[i] = row
        for position, first in sorted(ids.repeats.items()):
            rows[position] = [*rows[first][:2], 1, *rows[first][3:]]
        self._keep(client, [plans[i] for i in live], [rows[i] for i in live], at)
        return rows, [at] * len(plans)

    def _request_ids(self, client: Any, plans: list[ItemPlan], at: int) -> RequestIds:
        """slots.RequestIds of the batch by position in `plans`; raises IdempotencyKeyReused before anything is
        spent."""
        with_ids = [i for i, plan in enumerate(plans) if plan.idem_key is not None]
        stored = client.mget_nonatomic([plans[i].idem_key for i in with_ids]) if with_ids else []
        found = request_ids([plans[i] for i in with_ids], [_text(s) if s else None for s in stored], at)
        if found.reused:
            raise IdempotencyKeyReused(tuple(with_ids[n] for n in found.reused))
        found.replays = {with_ids[n]: text for n, text in found.replays.items()}
        found.repeats = {with_ids[n]: with_ids[first] for n, first in found.repeats.items()}
        return found

    def _decided_slots(self, client: Any, slots: dict[int, list[Part]], at: int) -> dict[int, list[Row]]:
        """{slot: the rows of its parts}, every slot decided at `at`: each reserves in turn until one refuses; then
        the reserved ones are refunded (one pipeline) and every other slot is looked at (one pipeline: one round
        trip per node), step 3."""
        found: dict[int, list[Row]] = {}
        reserved: list[int] = []  # the slots that spent and have not been given back yet
        try:
            for slot, parts in slots.items():
                found[slot] = self._slot_rows(client, [part for _, part in parts], at)
                if any(row[0] == 0 for row in found[slot]):
                    break  # refused whole: this slot spent nothing, and no slot after it will
                reserved.append(slot)
            else:
                return found  # every slot admitted its parts, and spent
            self._give_back(client, slots, found, reserved, at)
        except BaseException:
            with contextlib.suppress(Exception):  # Redis failed midway: give back what it still can
                self._give_back(client, slots, found, reserved, at)
            raise
        looked = [slot for slot in slots if slot not in found or found[slot][0][0] == 1]  # all but the refusing one
        plans = [part for slot in looked for _, part in slots[slot]]
        groups: dict[int, list[int]] = {}
        first = 0
        for slot in looked:
            groups[slot] = list(range(first, first + len(slots[slot])))
            first += len(slots[slot])
        rows = self._pipelined_rows(client, plans, groups, LOOK_ONLY, [0] * len(plans), at)  # type: ignore[attr-defined]
        for slot, members in groups.items():
            found[slot] = [rows[i] for i in members]
        return found

    def _slot_rows(self, client: Any, parts: list[ItemPlan], at: int) -> list[Row]:
        """check.lua in atomic mode on one slot's parts at `at`: spends only if it admits them all."""
        answer = self._group_rows(client, parts, True, *self._slot_keys(parts[0]), now=at)  # type: ignore[attr-defined]
        rows, _ = answer_now(answer)
        if len(rows) != len(parts):
            raise ValueError(f"check.lua answered {len(rows)} rows for {len(parts)} parts")
        return rows

    def _give_back(
        self, client: Any, slots: dict[int, list[Part]], found: dict[int, list[Row]], reserved: list[int], at: int
    ) -> None:
        """refund.lua on each slot in `reserved` (once for all the parts of a slot that spent, not the dry runs),
        in one pipeline; each slot given back leaves `reserved`. Raises the first error after the others ran."""
        now, calls = self._now_arg(), []  # type: ignore[attr-defined]
        pipe = client.pipeline(transaction=False)
        for slot in reserved:
            spent = [(part, row) for (_, part), row in zip(slots[slot], found[slot], strict=True)]
            keys, args = refund_call([(part, row) for part, row in spent if not part.item.dry_run], now, at)
            if keys:  # a cluster routes a call by its keys: one without any has nothing to give back anyway
                node = client.get_node_from_key(keys[0])  # named: no COMMAND GETKEYS first (cluster.py)
                pipe.execute_command("EVAL", REFUND_SCRIPT, len(keys), *keys, *args, target_nodes=node)
                calls.append(slot)
        answers = pipe.execute(raise_on_error=False) if calls else []
        failed = {slot for slot, answer in zip(calls, answers, strict=True) if isinstance(answer, Exception)}
        reserved[:] = [slot for slot in reserved if slot in failed]
        errors = [answer for answer in answers if isinstance(answer, Exception)]
        if errors:
            raise errors[0]

    def _keep(self, client: Any, plans: Sequence[ItemPlan], rows: Sequence[Row], at: int) -> None:
        """The decisions under their request ids and the decision log's entries of the audited limits, in one
        pipeline (one round trip per node; none when there are neither)."""
        pipe = client.pipeline(transaction=False)
        sent = False
        log, streams = self._log, set()  # type: ignore[attr-defined]
        for plan, row in zip(plans, rows, strict=True):
            if plan.item.dry_run:
                continue
            if plan.idem_key is not None:
                stored = f"{at}|{','.join(str(int(value)) for value in row)}|{item_descriptor(plan)}"
                pipe.set(plan.idem_key, stored, px=IDEMPOTENCY_TTL_MS)
                sent = True
            for entry in item_entries(plan, row[0] == 1, 0, at, log.instance):
                stream = log_key_of(log.prefix, entry.key)
                pipe.execute_command("XADD", stream, "MAXLEN", "~", log.max_per_slot, "*", *decision_fields(entry))
                streams.add(stream)
                sent = True
        for stream in sorted(streams):
            pipe.pexpire(stream, LOG_TTL_MS)
        if sent:
            pipe.execute()


def _slot_parts(prefix: str, plans: dict[int, ItemPlan]) -> dict[int, list[Part]]:
    """{slot: (position, part) of every item with limits on it, in the batch's order}, in slot order."""
    by_slot: dict[int, list[Part]] = {}
    for position, plan in plans.items():
        home, aways = split_plan(prefix, plan)
        for part in [home, *aways]:
            if part.limits:
                by_slot.setdefault(slot_of(part.usage_base), []).append((position, part))
    return {slot: by_slot[slot] for slot in sorted(by_slot)}


def _batch_retry(found: dict[int, list[Row]]) -> int:
    """The earliest wait after which every slot would admit its parts together (-1: never): every slot was
    refused whole (looked at), and each row says its slot's wait."""
    waits = [rows[0][1] for rows in found.values() if rows]
    return -1 if -1 in waits else max(waits, default=0)
