"""What a check gets when Redis cannot answer: each limit follows its `on_store_failure` policy.

- open: admits (the limit is not counted while Redis is away).
- closed: the whole check is refused with 503 `store_unavailable` (counted as `unavailable` in usage).
- database: counted in PostgreSQL in windows of the limit's period (a minute or more), aligned, that start from
  what the counter already spent (database.py); what it admits is recorded so Redis rebuilds the counter with it
  afterwards (recovery.py). A limit of less than a minute is enforced at its own period as `local` does.
- local: enforced in this process against the limit divided by the number of live API instances (local.py).
Decisions are atomic per check and per atomic batch (decide.py), reach the usage tables as `degraded`, and a
request id gets the answer its caller received on a retry (requests.py). Time comes from this host's clock:
Redis, the usual source, is what is missing.
"""

from apps.enforcement.fallback.database import fallback_layout
from apps.enforcement.fallback.decide import (
    FallbackDecision,
    StoreUnavailable,
    fallback_batch,
    fallback_check,
    fallback_replays,
)
from apps.enforcement.fallback.purge import fallback_purge

__all__ = [
    "FallbackDecision",
    "StoreUnavailable",
    "fallback_batch",
    "fallback_check",
    "fallback_layout",
    "fallback_purge",
    "fallback_replays",
]
