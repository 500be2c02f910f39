"""Stored decisions: the first decision of a request id, as check.lua keeps it, read and written from Python.

check.lua stores a check's decision under its idempotency key (keys.py) for IDEMPOTENCY_TTL_MS as
"<decided at ms>|<the answer array, comma-separated>|<descriptor>", the descriptor being
"<lease id>|<limits JSON [[name, algorithm, unit, quantity, shadow], ...]>|<fingerprint>" (script/args.py). A check
whose limits are all hybrid is decided in the API process, never by the script (apps/enforcement/hybrid/decide.py);
`StoredDecisions` lets it remember its request id in the same key and format, so either path replays what the other
stored: a GET before deciding (`recall`), then one small script storing the decision unless another one got there
first (`remember`, SET NX semantics with check.lua's age rule). The decoding is also RedisStore's (redis.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from apps.engine.deadline import DeadlineScript
from apps.engine.keys import IDEMPOTENCY_TTL_MS, KeyLayout
from apps.engine.store.decide import Outcome
from apps.engine.store.plan import request_fingerprint, usage_costs
from apps.engine.types import CheckItem, Decision, IdempotencyKeyReused, LimitResult

_compact_json = json.JSONEncoder(separators=(",", ":")).encode  # store/script/args.py's, so descriptors agree
_FINGERPRINT = re.compile(r"\|([0-9a-fA-F]+)$")  # check.lua: match(stored, '|(%x+)$')

# KEYS[1] the idempotency key; ARGV: the decision to store, now ms, the TTL ms. Answers the decision already
# stored (younger than the TTL by `now`, as check.lua judges it) and writes nothing, or stores this one: false.
REMEMBER_SCRIPT = """
local old = redis.call('GET', KEYS[1])
if old and tonumber(ARGV[2]) - tonumber(string.match(old, '^(%d+)|')) < tonumber(ARGV[3]) then return old end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return false
"""


def check_fingerprint(item: CheckItem) -> str:
    """The fingerprint check.lua stores with a check's decision (plan.request_fingerprint, no lease)."""
    return request_fingerprint(item, usage_costs(item), None)


def stored_text(decision: Decision, fingerprint: str, decided_at_ms: int) -> str:
    """`decision` (of a check: no lease) as check.lua stores it."""
    retry = (
        decision.delay_ms if decision.allowed else -1 if decision.retry_after_ms is None else decision.retry_after_ms
    )
    row = [int(decision.allowed), retry, 0, 0]
    for result in decision.limits:
        row += (int(result.over), result.remaining, result.reset_ms)
    described = [[r.name, str(r.algorithm), r.unit, r.limit, r.shadow] for r in decision.limits]
    return f"{decided_at_ms}|{','.join(str(int(n)) for n in row)}||{_compact_json(described)}|{fingerprint}"


def stored_replay(stored: str, fingerprint: str, dry_run: bool, now_ms: int) -> Decision | None:
    """The decision to replay from `stored` to a check of `fingerprint`: None when it is older than the TTL;
    IdempotencyKeyReused when it answered other parameters (a dry run always differs; check.lua's rule)."""
    if now_ms - int(stored.split("|", 1)[0]) >= IDEMPOTENCY_TTL_MS:
        return None
    found = _FINGERPRINT.search(stored)
    same = found.group(1) == fingerprint if found else not dry_run  # none: stored before fingerprints
    if not same:
        raise IdempotencyKeyReused((0,))
    return stored_outcome(stored).decision


def stored_outcome(stored: str) -> Outcome:
    """The outcome stored as "<decided at ms>|<row>|<lease id>|<limits JSON>|<fingerprint>" (check.lua); a
    decision stored before fingerprints ends with the JSON."""
    _, numbers, lease_id, described = stored.split("|", 3)
    if not described.endswith("]"):
        described = described.rpartition("|")[0]
    row = [int(value) for value in numbers.split(",")]
    results = tuple(
        LimitResult(name, algorithm, unit, limit, row[n + 1], row[n + 2], shadow, row[n] == 1)
        for (name, algorithm, unit, limit, shadow), n in zip(json.loads(described), range(4, len(row), 3), strict=True)
    )
    return Outcome(row_decision(row, results, True), lease_id or None, row[3])


def row_decision(row: list[Any], results: tuple[LimitResult, ...], replayed: bool, decided_at_ms: int = 0) -> Decision:
    """row[1] is the retry (-1 = never) of a refused check, the delay of an admitted one (check.lua)."""
    if row[0] == 1:
        return Decision(True, 0, results, replayed, row[1], decided_at_ms)
    return Decision(False, None if row[1] == -1 else row[1], results, replayed, 0, decided_at_ms)


class StoredDecisions:
    """The stored decisions of one store's key layout on `client` (a Redis or a Redis Cluster client: each call
    names one key)."""

    def __init__(self, client: Any, layout: KeyLayout) -> None:
        self._client = client
        self._layout = layout
        self._remember = DeadlineScript(client, REMEMBER_SCRIPT)

    def recall(self, item: CheckItem, now_ms: int) -> Decision | None:
        """The decision stored for `item`'s request id, replayed (None: none, or too old); IdempotencyKeyReused
        when it was stored for other parameters."""
        key = self._layout.idempotency_key(item)
        stored = self._client.get(key) if key is not None else None
        if stored is None:
            return None
        return stored_replay(_text(stored), check_fingerprint(item), item.dry_run, now_ms)

    def remember(self, item: CheckItem, decision: Decision, now_ms: int) -> Decision | None:
        """Store `decision` as `item`'s first (never for a dry run): None when it was stored; else the decision
        another caller stored first (kept), replayed, or IdempotencyKeyReused when that one had other parameters."""
        key = self._layout.idempotency_key(item)
        if key is None or item.dry_run:
            return None
        fingerprint = check_fingerprint(item)
        old = self._remember(keys=[key], args=[stored_text(decision, fingerprint, now_ms), now_ms, IDEMPOTENCY_TTL_MS])
        return None if old is None else stored_replay(_text(old), fingerprint, False, now_ms)


def _text(value: bytes | str) -> str:
    return value.decode(errors="surrogateescape") if isinstance(value, bytes) else value
