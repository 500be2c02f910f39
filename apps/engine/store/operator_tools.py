"""RedisStore's operator tools (admin usage page, unblock): SCAN and plain commands, never on the hot path."""

from __future__ import annotations

import re
from collections.abc import Sequence

import redis

from apps.engine.clock import Clock
from apps.engine.keys import KeyLayout


def _text(value: bytes | str) -> str:
    # surrogateescape: a key that is not UTF-8 still reads, and the flush quarantines its row alone.
    return value.decode(errors="surrogateescape") if isinstance(value, bytes) else value


class RedisOperatorTools:
    """Mixed into RedisStore, which sets these three."""

    _client: redis.Redis
    _layout: KeyLayout
    _clock: Clock | None

    @property
    def key_prefix(self) -> str:
        return self._layout.prefix

    def counter_keys(self, head: str) -> list[str]:
        """The keys that start with `head`, sorted."""
        pattern = re.sub(r"([\\*?\[\]])", r"\\\1", head) + "*"
        return sorted(_text(key) for key in self._client.scan_iter(match=pattern, count=1000))

    def counters_delete(self, keys: Sequence[str]) -> int:
        """Delete `keys`; how many existed."""
        return int(self._client.delete(*keys)) if keys else 0

    def counters_forget(self, counters: Sequence[str]) -> None:
        """Delete `counters` (keys without the prefix) and start a new epoch, in one transaction: each durable
        counter is rebuilt from its records when next needed (after spending that Redis did not see). The epoch's
        warm mark goes with it, so the warm-up runs again (apps/enforcement/counters/warm_up.py)."""
        keys = [key for counter in counters for key in self._layout.keys_of_counter(counter)]
        pipe = self._client.pipeline(transaction=True)
        if keys:
            pipe.delete(*keys)
        pipe.delete(self._layout.epoch_key(), self._layout.warm_key())
        pipe.execute()

    def leases_live(self, keys: Sequence[str]) -> int:
        """Unexpired leases in the concurrency counters `keys`."""
        seconds, micros = self._client.time() if self._clock is None else divmod(self._clock.now_ms() * 1000, 10**6)
        now = int(seconds) * 1000 + int(micros) // 1000
        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.zcount(key, f"({now}", "+inf")
        return sum(int(count) for count in pipe.execute())
