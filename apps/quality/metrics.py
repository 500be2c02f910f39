"""The decision log's Prometheus metrics, defined once like apps/common/metrics.py's (same registry, same
multiprocess files under PROMETHEUS_MULTIPROC_DIR); off the hot path: the drain job counts into them."""

from __future__ import annotations

from prometheus_client import Counter

# Exposed as quota_decision_log_lost_total.
DECISION_LOG_LOST = Counter(
    "quota_decision_log_lost",
    "Decisions the check script logged whose log entry never reached PostgreSQL (trimmed by the stream's cap "
    "before a drain, or Redis lost), found by the drain's loss check (apps/quality/services/losses.py).",
)


def log_lost_count(count: int) -> None:
    """Count `count` log entries found lost."""
    DECISION_LOG_LOST.inc(count)
