"""RedisStore: one call per check and per batch, the Function of the check's shape (shaped.py) or lua/check.lua.

The scripts are assembled from apps/engine/lua/ once at import and registered on the client; after a Redis restart
emptied its caches (NOSCRIPT, or a Function not found) they are loaded again and the call retried, once. Time is
Redis server time unless a test clock is given.

Usage is not counted in Redis: each Decision carries the script's now (decided_at_ms), and the caller tallies its
usage and what it spent on durable counters (LimitSpec.durable, see durability.py) in its own process
(apps/enforcement/ledger/tally.py). Given a seeder, the store rebuilds durable counters after a Redis data loss.
If Redis lost its data (the epoch key is missing) and a durable counter whose look-back began before the new epoch
is missing, the script answers "needs seed" without deciding; the seeder reads the counter's records (PostgreSQL),
the store replays them through the reference model (seeds.py) and calls again with the rebuilt states, which the
script writes back. That second round trip happens once per counter after a loss, never otherwise.

script/args.py builds KEYS and ARGV (their fields: script/check_fields.py), script/assembly.py the script; a Redis
error in the script names the .lua file and line it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import redis
from redis.exceptions import NoScriptError, ResponseError

from apps.engine.clock import Clock, SystemClock
from apps.engine.deadline import DeadlineScript, deadline_arg, raise_if_deadline, with_deadline
from apps.engine.decision_log import DEFAULT_MAX_PER_SLOT, LogSettings, default_instance
from apps.engine.durability import History
from apps.engine.keys import KeyLayout
from apps.engine.limit_spec import LimitSpec
from apps.engine.name_budget import RedisNameBudget
from apps.engine.reference.base import Params
from apps.engine.store.answers import answer_code, answer_now, plan_decision, plan_outcome
from apps.engine.store.operator_tools import RedisOperatorTools
from apps.engine.store.plan import ItemPlan, LimitPlan, check_mode, lease_ttl_ms, plan_item
from apps.engine.store.script.args import encode
from apps.engine.store.script.assembly import assemble, locate
from apps.engine.store.script.check_fields import NEEDS_SEED, REUSED
from apps.engine.store.seeds import seed_text
from apps.engine.store.sessions import RELEASE_SCRIPT, RENEW_SCRIPT, RedisLeases
from apps.engine.store.shaped import ShapedChecks
from apps.engine.store.usage_drain import RedisUsageDrain
from apps.engine.store.warm import WarmWriter
from apps.engine.types import (
    BatchMode,
    CheckItem,
    Decision,
    IdempotencyKeyReused,
    Resynced,
    SeedRequest,
)

# Answers, per request, the counter's records since the look-back start: (bucket start ms, amount) pairs.
# A lease set's answer is its allocations' members (store/seeds.py).
Seeder = Callable[[Sequence[SeedRequest]], Sequence[History | Sequence[str]]]
MAX_SEED_CALLS = 3


CHECK = assemble("check.lua")
CHECK_SCRIPT = CHECK.text


class RedisStore(RedisUsageDrain, RedisOperatorTools):
    """A Store on Redis. key_prefix: starts every key written; clock: None = Redis server time."""

    def __init__(
        self,
        client: redis.Redis,
        key_prefix: str,
        clock: Clock | None = None,
        seeder: Seeder | None = None,
        batch_client: redis.Redis | None = None,
        instance: str | None = None,
        log_max_per_slot: int = DEFAULT_MAX_PER_SLOT,
        shaped: bool = True,
    ) -> None:
        """batch_client: used for batches of more than one check, e.g. with a longer socket timeout (a
        1000-item script takes tens of ms of Redis CPU, and a timeout does not stop it from running).
        instance: this API node's id in the decision log (default hostname:pid); log_max_per_slot: the cap of
        each log stream (decision_log.py); shaped: False sends every check to check.lua (tests compare the two)."""
        self._client = client
        self._log = LogSettings(key_prefix, instance or default_instance(), log_max_per_slot)
        self._batch_client = batch_client or client
        self._layout = KeyLayout(key_prefix)
        self._clock = clock
        self._seeder = seeder
        self._epoch_key = self._layout.epoch_key() if seeder is not None else None
        self._warm_key = self._layout.warm_key()
        self._hint: Clock = clock or SystemClock()
        self._check = DeadlineScript(client, CHECK_SCRIPT)
        self._leases = RedisLeases(client, self._layout, self._now_arg, self._log)
        self._index_base = f"{key_prefix}:ui:"
        self._names = RedisNameBudget(client, key_prefix=key_prefix, clock=self._hint)
        self._shaped = ShapedChecks(client, self._layout, seeder is not None, self._shape_keys if shaped else None)

    def warm_writer(self) -> WarmWriter:
        """What the warm-up after an empty restart writes through (store/warm.py)."""
        return WarmWriter(self._client, self._layout, cluster=False, clock=self._clock)

    def names_admit(self, service: str, names: Sequence[str], per_day: int) -> list[bool]:
        """See Store.names_admit: one atomic call for all of them (name_admit.lua)."""
        return self._names.admit(service, names, per_day)

    def load_scripts(self) -> None:
        """Load the scripts now (optional warm-up; calls load them on demand otherwise)."""
        for script in (CHECK_SCRIPT, RENEW_SCRIPT, RELEASE_SCRIPT):
            self._client.script_load(with_deadline(script))

    def check(self, item: CheckItem, limits: Sequence[LimitSpec]) -> Decision:
        """Decide one check against `limits` in one round trip (see Store.check): by the script of its shape when
        it has one (shaped.py), else by check.lua."""
        hint = self._hint.now_ms()
        decided = self._shaped.decide((item,), limits, self._now_arg(), hint)
        if decided is not None:
            return decided[0]
        plan = plan_item(self._layout, item, limits, hint)
        rows, nows = self._rows([plan], False)
        return plan_decision(plan, rows[0], nows[0])

    def _shape_keys(self, item: CheckItem, counter_keys: list[str], rebuilds: bool) -> list[str] | None:
        """The warm mark and the epoch key a shape that rebuilds reads after its counters (see shaped.ExtraKeys)."""
        return [self._layout.warm_key(), self._layout.epoch_key()] if rebuilds else []

    def check_batch(
        self, pairs: Sequence[tuple[CheckItem, Sequence[LimitSpec]]], mode: BatchMode = "independent"
    ) -> list[Decision]:
        """Decide checks in order in one round trip (see Store.check_batch): an independent batch whose checks all
        name the same limits by the script of their shape when it has one (shaped.py), else by check.lua."""
        atomic = check_mode(mode)
        hint = self._hint.now_ms()
        client = self._batch_client if len(pairs) > 1 else self._client
        if pairs and not atomic and all(limits is pairs[0][1] for _, limits in pairs):
            decided = self._shaped.decide([item for item, _ in pairs], pairs[0][1], self._now_arg(), hint, client)
            if decided is not None:
                return decided
        plans = [plan_item(self._layout, item, limits, hint) for item, limits in pairs]
        rows, nows = self._rows(plans, atomic, client)
        return [plan_decision(plan, row, now) for plan, row, now in zip(plans, rows, nows, strict=True)]

    def lease_acquire(
        self, item: CheckItem, limit: LimitSpec, ttl_s: int | None, others: Sequence[LimitSpec] = ()
    ) -> tuple[Decision, str | None, int]:
        """Take a slot of concurrency `limit` in one round trip (see Store.lease_acquire)."""
        plan = plan_item(self._layout, item, [limit, *others], self._hint.now_ms(), lease_ttl_ms(ttl_s))
        rows, nows = self._rows([plan], False)
        outcome = plan_outcome(plan, rows[0], nows[0])
        return outcome.decision, outcome.lease_id, outcome.lease_expires

    def lease_renew(self, lease_id: str, ttl_s: int) -> int | None:
        """Extend a live lease in one round trip (see Store.lease_renew; store/sessions.py)."""
        return self._leases.renew(lease_id, lease_ttl_ms(ttl_s))

    def lease_release(self, lease_id: str) -> None:
        """Give a lease back in one round trip (see Store.lease_release; store/sessions.py)."""
        self._leases.release(lease_id)

    def allocations_set(self, item: CheckItem, limit: LimitSpec, held: int) -> Resynced:
        """See Store.allocations_set: one round trip (allocations.lua); two when the set is missing while the epoch
        is cold: it is rebuilt from the seeder's kept allocations first, as a check rebuilds it."""
        key = self._layout.counter_keys(limit, item)[0]
        if self._seeder is None:
            return self._leases.allocations_set(key, item.customer, held)
        counter, seeder = self._layout.counter_id(key), self._seeder

        def kept() -> str:
            (members,) = seeder([SeedRequest(limit, item, counter, 0, self._hint.now_ms())])
            return seed_text(limit, Params(0, 0, 0), members, 0)

        warm_key = self._layout.warm_key(self.warm_writer().tag_of(key))
        return self._leases.allocations_set(key, item.customer, held, kept, warm_key)

    def responsive(self, node: str | None = None) -> bool:
        """Does Redis answer a PING (within the client's timeout)? node: ignored here (one Redis)."""
        return bool(self._client.ping())

    def now_hint_ms(self) -> int:
        """Now without asking Redis: the test clock when one was given, else this host's clock."""
        return self._hint.now_ms()

    def _now_arg(self) -> int | str:
        return "" if self._clock is None else self._clock.now_ms()

    def _rows(
        self, plans: list[ItemPlan], atomic: bool, client: redis.Redis | None = None
    ) -> tuple[list[list[Any]], list[int]]:
        """check.lua's row for each plan, and the script's now for each (one call: the same now)."""
        client = client or self._client
        now = self._now_arg()
        seeds: dict[int, str] = {}
        for _ in range(MAX_SEED_CALLS):
            keys, args, definitions = encode(
                plans, atomic, now, self._index_base, self._epoch_key, seeds, self._log, self._warm_key
            )
            rows = self._eval(client, keys, args)
            if answer_code(rows) != NEEDS_SEED:
                break
            seeds.update(self._seeds(rows[0], definitions))
        else:
            raise RuntimeError(f"check.lua still asked for seeds after {MAX_SEED_CALLS} calls")
        if answer_code(rows) == REUSED:
            raise IdempotencyKeyReused(tuple(int(number) - 1 for number in rows[0][1:]))
        rows, now = answer_now(rows)
        if len(rows) != len(plans):
            raise ValueError(f"check.lua answered {len(rows)} rows for {len(plans)} checks")
        return rows, [now] * len(rows)

    def _eval(self, client: redis.Redis, keys: list[str], args: list[Any]) -> list[list[Any]]:
        """check.lua with its deadline (deadline.py): past it, Redis writes nothing and this raises DeadlinePassed."""
        try:
            try:
                rows: list[list[Any]] = client.evalsha(self._check.sha, len(keys), *keys, *args, deadline_arg(client))
            except NoScriptError:
                # Redis restarted or SCRIPT FLUSH: load once more and retry (what redis-py's Script does).
                rows = self._check(keys=keys, args=args, client=client)
        except ResponseError as error:
            raise_if_deadline(error)
            locate(error, CHECK)
            raise
        return rows

    def _seeds(self, answer: list[Any], definitions: list[tuple[LimitPlan, CheckItem]]) -> dict[int, str]:
        """{definition number: rebuilt state} for the durable counters the script found missing."""
        if self._seeder is None:  # the script asks only a store that sent the epoch key, i.e. has a seeder
            raise RuntimeError("check.lua asked for seeds, but this store has no seeder")
        now, wanted = int(answer[1]), answer[2:]
        numbers, starts = [int(n) for n in wanted[::2]], [int(s) for s in wanted[1::2]]
        limits = [definitions[n - 1] for n in numbers]
        requests = [
            SeedRequest(limit.spec, item, self._layout.counter_id(limit.keys[0]), since, now)
            for (limit, item), since in zip(limits, starts, strict=True)
        ]
        histories = self._seeder(requests)
        return {
            n: seed_text(limit.spec, limit.params(now), history, now)
            for n, (limit, _), history in zip(numbers, limits, histories, strict=True)
        }
