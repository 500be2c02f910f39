"""What the beat jobs of the decision log run (registered in apps/ops/jobs.py): the drain with its loss check
every minute, the retention purge and the audit of the previous day daily."""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings

from apps.enforcement.counters.redis_clients import counters_client
from apps.quality.services.drain import DrainReport, decision_log_drain
from apps.quality.services.losses import LossReport, log_losses_check

# The drain reads pages of thousands of entries: a longer reply timeout than a check's.
DRAIN_TIMEOUT_MS = 10_000


@dataclass(frozen=True, slots=True)
class DrainJobReport:
    drain: DrainReport | None
    losses: LossReport | None

    @property
    def summary(self) -> str:
        if self.drain is None:
            return "no Redis (embedded default): the decision log is not recorded, nothing to drain"
        text = self.drain.summary
        if self.losses is None:
            return text + "; loss check skipped until a drain reaches every stream"
        return f"{text}; {self.losses.summary}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "drain": asdict(self.drain) if self.drain else None,
            "losses": asdict(self.losses) if self.losses else None,
        }


def decision_log_drain_job() -> DrainJobReport:
    """Drain every stream of the counters' Redis, then check the minutes now both flushed and drained."""
    client = log_redis()
    if client is None:
        return DrainJobReport(None, None)
    started_ms = int(time.time() * 1000)
    drain = decision_log_drain(client=client, prefix=settings.QUOTA_KEY_PREFIX)
    losses = log_losses_check(drained_at_ms=started_ms) if drain.complete else None
    return DrainJobReport(drain, losses)


def log_redis() -> Any | None:
    """A client of the counters' Redis or Redis Cluster (COUNTERS_REDIS_URL, else REDIS_URL), made once per
    process; None with the embedded default."""
    url = settings.COUNTERS_REDIS_URL
    return _client(url, max(DRAIN_TIMEOUT_MS, settings.QUOTA_REDIS_TIMEOUT_MS)) if url else None


@functools.lru_cache(maxsize=4)
def _client(url: str, timeout_ms: int) -> Any:
    return counters_client(url, timeout_ms)
