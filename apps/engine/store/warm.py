"""The warm-up's writes: durable counters rebuilt in bulk after Redis came up empty, and the epoch's warm mark.

The warm-up (apps/enforcement/counters/warm_up.py) rebuilds the durable counters of open windows from their records
with seed_text, as the per-counter seeding does, and the lease sets from the allocations PostgreSQL keeps, and hands
them here by hash tag. lua/warm.lua writes a chunk in one
call: each counter only while it is missing (a check may have rebuilt or spent it first), and only while the epoch is
still the one the warm-up began in (a reset by counters_reconcile, or another loss, makes the chunk write nothing;
the next run starts over). The mark goes last, with the epoch's remaining TTL.

Where the epoch is, the mark is: one of each on a single Redis (tag ""); one per hash tag on a Redis Cluster, since a
check's script reads only keys of its own slot (keys.py). So on a Cluster a node that restarts empty loses the marks
of its slots' tags with their epochs, and only those tags are warmed again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from apps.engine.clock import Clock
from apps.engine.keys import EPOCH_TTL_MS, KeyLayout
from apps.engine.registry import LEASE_SET
from apps.engine.store.operator_tools import _text

WARM_SCRIPT = (resources.files("apps.engine") / "lua" / "warm.lua").read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """A durable counter rebuilt from its records: its name as records give it (a key without the prefix), and
    what seed_text made of them ("<ttl ms>|<state>", never an empty state)."""

    counter: str
    text: str


@dataclass(frozen=True, slots=True)
class Chunk:
    """One warm.lua call: counters of one tag (a Cluster slot's; all of them on one Redis) and, when `mark`, the
    tag's warm mark after them."""

    tag: str
    epoch: str
    counters: Sequence[Rebuilt]
    mark: bool = False


class WarmWriter:
    """Writes rebuilt counters and warm marks into one store's Redis (or Redis Cluster)."""

    def __init__(self, client: Any, layout: KeyLayout, *, cluster: bool, clock: Clock | None = None) -> None:
        self._client = client
        self._layout = layout
        self._cluster = cluster
        self._clock = clock
        self._sha: str | None = None

    @property
    def cluster(self) -> bool:
        """One epoch per hash tag (a Redis Cluster), or one for the whole store."""
        return self._cluster

    @property
    def layout(self) -> KeyLayout:
        return self._layout

    def tag_of(self, counter: str) -> str:
        """The tag whose epoch governs `counter` (a key with or without the prefix): its hash tag on a Cluster."""
        return self._layout.slot_tag(counter) if self._cluster else ""

    def customer_tag(self, customer_part: str) -> str:
        """The tag of a customer's slot ("{c=<encoded customer>}"), "" on a single Redis."""
        return "{c=" + customer_part + "}" if self._cluster else ""

    def now_ms(self) -> int:
        """The time checks are decided at: the store's test clock, else the server's (a Cluster: any node's)."""
        if self._clock is not None:
            return self._clock.now_ms()
        seconds, micros = self._client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    def warm_tags(self, tags: Iterable[str]) -> set[str]:
        """The tags among `tags` whose epoch is warm (one MGET; per slot on a Cluster)."""
        tags = list(dict.fromkeys(tags))
        if not tags:
            return set()
        keys = [self._layout.warm_key(tag) for tag in tags]
        found = self._client.mget_nonatomic(keys) if self._cluster else self._client.mget(keys)
        return {tag for tag, value in zip(tags, found, strict=True) if value is not None}

    def begin(self, tags: Sequence[str], now: int) -> dict[str, tuple[str, bool]]:
        """{tag: (its epoch, whether it was missing)}: the epoch each tag's writes must still find, set to `now` where
        there was none (Redis found empty), as the first check would set it."""
        pipe = self._client.pipeline(transaction=False)
        for tag in tags:
            pipe.set(self._layout.epoch_key(tag), str(now), nx=True, px=EPOCH_TTL_MS)
            pipe.get(self._layout.epoch_key(tag))
        answers = pipe.execute()
        return {tag: (_text(answers[2 * n + 1]), bool(answers[2 * n])) for n, tag in enumerate(tags)}

    def write(self, chunks: Sequence[Chunk]) -> list[int]:
        """Each chunk in one warm.lua call, all in one pipeline: per chunk, how many counters it wrote (the others
        were there already), or -1 when its tag's epoch changed meanwhile (nothing written)."""
        if not chunks:
            return []
        sha = self._sha or self._load()
        pipe = self._client.pipeline(transaction=False)
        for chunk in chunks:
            keys = [self._layout.epoch_key(chunk.tag), self._layout.warm_key(chunk.tag)]
            args = [chunk.epoch, "1" if chunk.mark else "0"]
            for rebuilt in chunk.counters:
                ttl, state = rebuilt.text.split("|", 1)
                counter_keys = self._layout.keys_of_counter(rebuilt.counter)
                keys += counter_keys
                kind = "a" if f"}}:{LEASE_SET.code}:" in rebuilt.counter else "l" if len(counter_keys) > 1 else "s"
                args += [kind, ttl, state]
            if self._cluster:
                node = self._client.get_node_from_key(keys[0])  # as cluster.py: no COMMAND GETKEYS per call
                pipe.execute_command("EVALSHA", sha, len(keys), *keys, *args, target_nodes=node)
            else:
                pipe.evalsha(sha, len(keys), *keys, *args)
        return [int(answer) for answer in pipe.execute()]

    def _load(self) -> str:
        # On a Cluster SCRIPT LOAD goes to every primary; a node that restarts meanwhile fails the run (NOSCRIPT),
        # and the next run loads it again.
        self._sha = str(self._client.script_load(WARM_SCRIPT))
        return self._sha
