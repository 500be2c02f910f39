"""Usage services: flush (store -> UsageMinute, exactly once), rollup (minutes -> hours -> days), purge."""

from apps.usage.services.flush import FlushReport, usage_flush
from apps.usage.services.purge import usage_purge
from apps.usage.services.rollup import RollupReport, usage_rollup

__all__ = ["FlushReport", "RollupReport", "usage_flush", "usage_purge", "usage_rollup"]
