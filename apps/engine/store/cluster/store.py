"""ClusterStore: the RedisStore protocol on a Redis Cluster, one script call per hash slot.

Redis Cluster runs a script only when every key it names hashes to one slot. Every key of a check is tagged
(keys.py): counters by customer, IP or limit name, and the check's own idempotency key (and a lease's session time
in usage) by customer. So a check whose limits are all keyed by customer (the common case) is one EVALSHA on the
node serving that customer's slot, exactly as on a single Redis; the per-minute usage index and the epoch key (both
untagged on a single Redis) take the slot's customer tag here: `<prefix>:ui:{c=<customer>}:<minute>` and
`<prefix>:epoch:{c=<customer>}`. Usage itself is tallied by the caller, from each Decision's decided_at_ms (the now
of the script that decided it: each node's own clock). So a node that restarts empty loses its customers' epochs
with their counters, and their durable counters are rebuilt from their records as after any loss.


A batch is grouped by slot; the groups go out in one cluster pipeline (one round trip per node, the nodes
in turn) and the answers are put back in the batch's order. A check whose limits live on several slots (a per-IP
or global limit beside per-customer ones) is reserved slot by slot and refunded on refusal (spread.py); so is an
atomic batch over several slots (several customers), all or nothing (atomic_slots.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.crc import key_slot
from redis.exceptions import AskError, MovedError, NoScriptError, RedisClusterException, RedisError, TryAgainError

from apps.engine.deadline import deadline_arg, raise_if_deadline
from apps.engine.keys import enc
from apps.engine.store.answers import answer_code, answer_now
from apps.engine.store.base import UsageRow
from apps.engine.store.cluster.atomic_slots import AtomicSlots
from apps.engine.store.cluster.slots import reused_positions
from apps.engine.store.cluster.spread import SpreadChecks
from apps.engine.store.operator_tools import _text
from apps.engine.store.plan import ItemPlan
from apps.engine.store.redis import MAX_SEED_CALLS, RedisStore
from apps.engine.store.script.args import encode
from apps.engine.store.script.check_fields import NEEDS_SEED, REUSED
from apps.engine.store.warm import WarmWriter
from apps.engine.types import CheckItem, IdempotencyKeyReused

# Answers of a pipelined call that did not run the script: sending the group again alone is safe.
NOT_RUN = (NoScriptError, MovedError, AskError, TryAgainError)


class ClusterStore(AtomicSlots, SpreadChecks, RedisStore):
    """A Store on Redis Cluster (client: redis.cluster.RedisCluster). See the module docstring."""

    def _shape_keys(self, item: CheckItem, counter_keys: list[str], rebuilds: bool) -> list[str] | None:
        """A shaped call names one slot: its counters' and, when it rebuilds, the first item's customer's warm mark
        and epoch (in that customer's slot); keys on several slots go to check.lua's slot groups."""
        slot = key_slot(counter_keys[0].encode())
        if any(key_slot(key.encode()) != slot for key in counter_keys[1:]):
            return None
        if not rebuilds:
            return []
        tag = f"{{c={enc(item.customer)}}}"
        if key_slot(tag.encode()) != slot:
            return None
        return [self._layout.warm_key(tag), self._layout.epoch_key(tag)]

    def _rows(self, plans: list[ItemPlan], atomic: bool, client: Any = None) -> tuple[list[list[Any]], list[int]]:
        client = client or self._client
        groups, spread = slot_groups(plans)
        if atomic and len(groups) + len(spread) > 1:
            return self._atomic_rows(client, plans)
        if len(groups) == 1 and not spread:  # a check, or a batch on one customer: one EVALSHA, as on one Redis
            (members,) = groups.values()
            answer = self._group_rows(client, plans, atomic, *self._slot_keys(plans[0]))
            _raise_if_reused(answer, members)
            rows, now = answer_now(answer)
            return rows, [now] * len(rows)
        if len(groups) + len(spread) > 1:
            self._refuse_reused_ids(client, plans)
        nows = [0] * len(plans)
        rows = self._pipelined_rows(client, plans, groups, atomic, nows) if groups else [[] for _ in plans]
        for position in spread:  # after the others: a batch's items on several slots are decided last
            rows[position], nows[position] = self._spread_row(client, plans[position], position)
        return rows, nows

    def _pipelined_rows(
        self,
        client: Any,
        plans: list[ItemPlan],
        groups: dict[int, list[int]],
        atomic: bool | str,
        nows: list[int],
        at: int | None = None,
    ) -> list[list[Any]]:
        """Each slot's group in one cluster pipeline (one round trip per node); rows in the plans' order, and each
        one's script time into `nows`. at: an explicit time for every group (atomic_slots.py)."""
        now = self._now_arg() if at is None else at
        pipe = client.pipeline(transaction=False)
        calls = []
        for members in groups.values():
            index_base, epoch_key, warm_key = self._slot_keys(plans[members[0]])
            group = [plans[i] for i in members]
            keys, args, _ = encode(group, atomic, now, index_base, epoch_key, {}, self._log, warm_key)
            # The node named: without it redis-py 8.1's cluster pipeline asks a node for the keys of every
            # EVALSHA (COMMAND GETKEYS, one more round trip per slot); a redirected group is sent again alone.
            node = client.get_node_from_key(keys[0])
            deadline = deadline_arg(client)
            pipe.execute_command("EVALSHA", self._check.sha, len(keys), *keys, *args, deadline, target_nodes=node)
            calls.append((members, index_base, epoch_key, warm_key))
        answers = pipe.execute(raise_on_error=False)
        rows: list[list[Any]] = [[] for _ in plans]
        for (members, index_base, epoch_key, warm_key), answer in zip(calls, answers, strict=True):
            group = [plans[i] for i in members]
            raise_if_deadline(answer)
            if isinstance(answer, Exception) and not isinstance(answer, NOT_RUN):
                raise answer  # e.g. CLUSTERDOWN during a failover: the limits' failure policies answer
            if isinstance(answer, NOT_RUN) or _asks_seeds(answer):
                answer = self._group_rows(client, group, atomic, index_base, epoch_key, warm_key, at)
            _raise_if_reused(answer, members)
            answer, now = answer_now(answer)
            if len(answer) != len(members):
                raise ValueError(f"check.lua answered {len(answer)} rows for {len(members)} checks")
            for i, row in zip(members, answer, strict=True):
                rows[i], nows[i] = row, now
        return rows

    def _refuse_reused_ids(self, client: Any, plans: list[ItemPlan]) -> None:
        """Raise IdempotencyKeyReused before any slot is called when request ids are reused (one read per slot),
        so a batch over several slots writes nothing then, as on one Redis. The scripts check again as they run:
        only a conflicting reuse racing this call can find one slot decided and another refused."""
        positions = [i for i, plan in enumerate(plans) if plan.idem_key is not None]
        if not positions:
            return
        stored = client.mget_nonatomic([plans[i].idem_key for i in positions])
        now = self._clock.now_ms() if self._clock is not None else self._hint.now_ms()
        reused = reused_positions([plans[i] for i in positions], [_text(s) if s else None for s in stored], now)
        if reused:
            raise IdempotencyKeyReused(tuple(positions[n] for n in reused))

    def _group_rows(
        self,
        client: Any,
        plans: list[ItemPlan],
        atomic: bool | str,
        index_base: str,
        epoch_key: str | None,
        warm_key: str,
        now: int | None = None,
    ) -> list[list[Any]]:
        """One slot's checks called alone: loads the script if the node lacks it, rebuilds missing counters. Its
        answer as check.lua gave it (its now last, unless it refused reused request ids). now: an explicit time for
        the script (a check over several slots decides every slot at one time); atomic: or LOOK_ONLY
        (check_fields.py)."""
        seeds: dict[int, str] = {}
        for _ in range(MAX_SEED_CALLS):
            at = self._now_arg() if now is None else now
            keys, args, definitions = encode(plans, atomic, at, index_base, epoch_key, seeds, self._log, warm_key)
            rows = self._eval(client, keys, args)
            if not _asks_seeds(rows):
                return rows
            seeds.update(self._seeds(rows[0], definitions))
        raise RuntimeError(f"check.lua still asked for seeds after {MAX_SEED_CALLS} calls")

    def _slot_keys(self, plan: ItemPlan) -> tuple[str, str | None, str]:
        """(usage index base, epoch key, warm mark) in the slot of `plan`'s usage (its customer's; an away part's
        counters' tag, slots.py): the epoch and its mark are per hash tag here (keys.py)."""
        tag = self._layout.slot_tag(plan.usage_base)  # "{c=<customer>}"
        epoch_key = self._layout.epoch_key(tag) if self._seeder is not None else None
        return f"{self._layout.prefix}:ui:{tag}:", epoch_key, self._layout.warm_key(tag)

    def warm_writer(self) -> WarmWriter:
        """The warm-up's writes, per hash tag here (store/warm.py)."""
        return WarmWriter(self._client, self._layout, cluster=True, clock=self._clock)

    def node_of_customer(self, customer: str) -> str:
        """The name (host:port) of the master serving `customer`'s counters, from the client's slot map (no
        round trip); "unknown" while the map has no master for that slot."""
        try:
            return str(self._client.get_node_from_key(f"{{c={enc(customer)}}}").name)  # type: ignore[attr-defined]
        except (RedisClusterException, RedisError):
            return "unknown"

    def responsive(self, node: str | None = None) -> bool:
        """Does master `node` (host:port; None: any) answer a PING within the client's timeout?"""
        client: Any = self._client  # a RedisCluster
        target = client.get_node(node_name=node) if node else client.get_default_node()
        return target is not None and bool(client.ping(target_nodes=target))

    def usage_minutes(self) -> list[int]:
        """Minutes with usage waiting on any master (SCAN of every master for the per-slot indexes)."""
        return sorted({_minute_of(key) for key in self._index_keys("*")})

    def usage_rows(self, minute: int) -> list[UsageRow]:
        """The usage counted during `minute` on every master."""
        keys = sorted({_text(key) for index in self._index_keys(str(minute)) for key in self._client.smembers(index)})
        return self._usage_rows_of(keys)

    def usage_discard(self, minute: int) -> None:
        """Delete the usage of `minute` and its indexes, slot by slot."""
        for index in self._index_keys(str(minute)):
            members = [_text(key) for key in self._client.smembers(index)]
            self._client.delete(index, *members)  # one slot: the index and its members share the tag

    def counters_forget(self, counters: Sequence[str]) -> None:
        """Delete `counters`, and the epoch of each of their slots with its warm mark (rebuilt when next needed, and
        warmed again: apps/enforcement/counters/warm_up.py)."""
        for counter in counters:
            keys = self._layout.keys_of_counter(counter)
            tag = self._layout.slot_tag(counter)
            pipe = self._client.pipeline(transaction=False)
            pipe.delete(*keys)
            pipe.delete(self._layout.epoch_key(tag), self._layout.warm_key(tag))
            pipe.execute()

    def _index_keys(self, minute: str) -> list[str]:
        pattern = f"{self._layout.prefix}:ui:*:{minute}"
        return sorted({_text(key) for key in self._client.scan_iter(match=pattern, count=1000)})


def slot_groups(plans: Sequence[ItemPlan]) -> tuple[dict[int, list[int]], list[int]]:
    """({slot: the positions of the plans whose keys all hash to it}, in first-seen order; the positions of the
    plans whose limits live on several slots)."""
    groups: dict[int, list[int]] = {}
    spread = []
    for position, plan in enumerate(plans):
        slot = key_slot(plan.usage_base.encode())
        if any(key_slot(key.encode()) != slot for limit in plan.limits for key in limit.keys):
            spread.append(position)
        else:
            groups.setdefault(slot, []).append(position)
    return groups, spread


def _asks_seeds(answer: Any) -> bool:
    return isinstance(answer, list) and answer_code(answer) == NEEDS_SEED


def _raise_if_reused(answer: list[list[Any]], members: list[int]) -> None:
    """A slot's call that found request ids reused wrote nothing; the other slots' calls were decided."""
    if answer_code(answer) == REUSED:
        raise IdempotencyKeyReused(tuple(members[int(number) - 1] for number in answer[0][1:]))


def _minute_of(index_key: str) -> int:
    return int(index_key.rsplit(":", 1)[1])
