"""Usage services: flush (store -> UsageMinute, exactly once), decisions made without the store (-> UsageMinute),
rollup (minutes -> hours -> days), purge, and counter records."""

from apps.usage.services.decisions import DecisionCounts, usage_decisions_add
from apps.usage.services.flush import FlushReport, usage_flush
from apps.usage.services.purge import usage_purge
from apps.usage.services.records import counter_records_add
from apps.usage.services.rollup import RollupReport, usage_rollup

__all__ = [
    "DecisionCounts",
    "FlushReport",
    "RollupReport",
    "counter_records_add",
    "usage_decisions_add",
    "usage_flush",
    "usage_purge",
    "usage_rollup",
]
