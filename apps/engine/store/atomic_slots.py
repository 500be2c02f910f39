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
   is admitted. A refusal on slot k stops the spending: the slots after it run in look mode (check.lua 'l':
   atomic, then refused whole, saving nothing), which reports what each part sees and the wait its slot needs;
   slots 1..k-1 get refund.lua, then look mode too, so every refused item reports what it saw, as on one Redis.
   The batch's retry is the longest of the slots' (-1 when one can never pass).
4. The decisions are stored under their request ids (one SET per id, pipelined), and the decision log's allow or
   deny entries of the audited limits are written (one XADD per entry, pipelined; check.lua writes them itself on
   one slot, but a slot here cannot know the batch's outcome when it decides its part).
So a refused batch leaves every counter as it found it and the caller tallies no usage for it; an admitted one
spent on every slot. Round trips: one per slot (in turn), plus the time, the request ids and the log when there
are some, and two per reserved slot on a refusal. Between a reservation and its refund another check may find a
counter fuller than it ends up: it may be refused, never admitted beyond the limit. Not atomic against Redis
failing midway: the slots already reserved are refunded before the error goes up (the failure policies then
answer), unless Redis fails for those too. Two concurrent requests with one new request id may both be decided
(the id is claimed only when the batch is decided), as for a check over several slots.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from apps.engine.decision_log import LOG_TTL_MS, decision_fields, log_key_of
from apps.engine.keys import IDEMPOTENCY_TTL_MS
from apps.engine.store.answers import answer_now
from apps.engine.store.logbook import item_entries
from apps.engine.store.operator_tools import _text
from apps.engine.store.plan import ItemPlan
from apps.engine.store.script.args import item_descriptor
from apps.engine.store.script.check_fields import LOOK_ONLY, REPLAYED
from apps.engine.store.slots import merged_row, refund_call, request_ids, slot_of, split_plan
from apps.engine.store.spread import REFUND_SCRIPT
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

    def _request_ids(self, client: Any, plans: list[ItemPlan], at: int) -> Any:
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
        """{slot: the rows of its parts}, every slot decided at `at`: each reserves in turn until one refuses,
        the rest only look, and on a refusal the reserved ones are refunded and looked at again (step 3)."""
        found: dict[int, list[Row]] = {}
        reserved: list[int] = []  # the slots that spent and have not been given back yet
        try:
            for slot, parts in slots.items():
                mode: bool | str = LOOK_ONLY if len(found) > len(reserved) else True
                found[slot] = self._slot_rows(client, [part for _, part in parts], mode, at)
                if mode is True and all(row[0] == 1 for row in found[slot]):
                    reserved.append(slot)
            if len(found) == len(reserved):
                return found  # every slot admitted its parts, and spent
            refunded = list(reserved)
            while reserved:
                self._refund(client, slots[reserved[0]], found[reserved[0]], at)
                reserved.pop(0)
            for slot in refunded:
                found[slot] = self._slot_rows(client, [part for _, part in slots[slot]], LOOK_ONLY, at)
        except BaseException:
            for slot in reserved:  # Redis failed midway: give back what is still reserved, where it still can
                with contextlib.suppress(Exception):
                    self._refund(client, slots[slot], found[slot], at)
            raise
        return found

    def _slot_rows(self, client: Any, parts: list[ItemPlan], mode: bool | str, at: int) -> list[Row]:
        answer = self._group_rows(client, parts, mode, *self._slot_keys(parts[0]), now=at)  # type: ignore[attr-defined]
        rows, _ = answer_now(answer)
        if len(rows) != len(parts):
            raise ValueError(f"check.lua answered {len(rows)} rows for {len(parts)} parts")
        return rows

    def _refund(self, client: Any, parts: list[Part], rows: list[Row], at: int) -> None:
        """refund.lua on one slot, once for all its parts that spent (not the dry runs)."""
        spent = [(part, row) for (_, part), row in zip(parts, rows, strict=True) if not part.item.dry_run]
        keys, args = refund_call(spent, self._now_arg(), at)  # type: ignore[attr-defined]
        if keys:  # a cluster routes a call by its keys: one without any has nothing to give back anyway
            client.eval(REFUND_SCRIPT, len(keys), *keys, *args)

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
