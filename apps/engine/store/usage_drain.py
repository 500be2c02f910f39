"""What an older version left of usage in Redis, drained by the usage_flush job (apps/usage): before usage was
tallied in the process that decided (apps/enforcement/ledger), check.lua counted it in hashes per minute, indexed
per minute. Mixed into RedisStore (ClusterStore reads its indexes slot by slot)."""

from __future__ import annotations

import redis

from apps.engine.keys import KeyLayout
from apps.engine.store.base import UsageRow, usage_row
from apps.engine.store.operator_tools import _text


class RedisUsageDrain:
    """Mixed into RedisStore, which sets these three."""

    _client: redis.Redis
    _layout: KeyLayout
    _index_base: str

    def usage_minutes(self) -> list[int]:
        """Minutes with usage waiting (see Store.usage_minutes)."""
        found = self._client.scan_iter(match=self._index_base + "*", count=1000)
        return sorted(int(_text(key)[len(self._index_base) :]) for key in found)

    def usage_rows(self, minute: int) -> list[UsageRow]:
        """The usage counted during `minute` (see Store.usage_rows)."""
        keys = sorted(_text(key) for key in self._client.smembers(self._layout.usage_index_key(minute)))
        return self._usage_rows_of(keys)

    def _usage_rows_of(self, keys: list[str]) -> list[UsageRow]:
        """The UsageRow of each usage hash in `keys`, read in one pipeline."""
        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
        rows = []
        for key, fields in zip(keys, pipe.execute(), strict=True):
            counters = {_text(name): int(value) for name, value in fields.items()}
            rows.append(usage_row(self._layout, key, counters))
        return rows

    def usage_discard(self, minute: int) -> None:
        """Delete the usage of `minute` and its index (see Store.usage_discard)."""
        index = self._layout.usage_index_key(minute)
        keys = [_text(key) for key in self._client.smembers(index)]
        self._client.delete(index, *keys)
