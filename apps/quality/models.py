from django.db import models


class DecisionEvent(models.Model):
    """One entry of the decision and session log, drained from its Redis stream (services/drain.py).

    Partitioned by UTC day on `at` on PostgreSQL (migration 0001, services/partitions.py), so retention drops
    whole days. `slot` is the stream the entry came from (one per hash tag, apps/engine/decision_log.py) and
    `entry_id` its stream id: a drain repeated after a crash inserts nothing twice. PostgreSQL only accepts a
    unique constraint on a partitioned table that holds the partition key, so it is (slot, entry_id, at); an entry
    always has the same `at`, so that is as strict as (slot, entry_id). Reading back goes per slot in
    (at, entry_id) order through `decision_event_slot_at`, the audit merging the slots (no sort of the range).
    Columns mirror LogEntry: costs in the limit's unit, times in ms since the epoch but `at`. The exchanges of
    audited hybrid limits are `sync` rows (their counts in `cost` and `prev_count`).
    """

    slot = models.TextField(help_text="The Redis stream the entry was drained from (one per hash tag).")
    entry_id = models.TextField(help_text="The entry's stream id.")
    at = models.DateTimeField(help_text="Store time of the decision or lease event (the script's now), UTC.")
    kind = models.CharField(max_length=16, help_text="allow, deny, acquire, renew, release, expire or sync.")
    customer = models.TextField(blank=True)
    operation = models.TextField(blank=True)
    limit = models.TextField(blank=True)
    algorithm = models.TextField(blank=True)
    key = models.TextField(blank=True, help_text="The counter key (or lease set).")
    cost = models.BigIntegerField(
        default=0, help_text="Cost in the limit's unit (sync: the instance's admitted count in the window)."
    )
    quantity = models.BigIntegerField(default=0)
    period_ms = models.BigIntegerField(default=0)
    burst = models.BigIntegerField(default=0)
    window_ms = models.BigIntegerField(default=0, help_text="Window start (fixed and calendar windows), epoch ms.")
    shadow = models.BooleanField(default=False)
    mode = models.CharField(
        max_length=16, blank=True, help_text="exact, or hybrid for sync (hybrid decisions are not logged one by one)."
    )
    instance = models.TextField(blank=True, help_text="The API node that decided (host:pid), or the hybrid instance.")
    lease = models.TextField(blank=True, help_text="The lease member (lease events).")
    expires_ms = models.BigIntegerField(default=0, help_text="Lease expiry, epoch ms (acquire and renew).")
    prev_window_ms = models.BigIntegerField(default=0, help_text="sync: the previous window's start, epoch ms.")
    prev_count = models.BigIntegerField(default=0, help_text="sync: its admitted count in that previous window.")
    sync_ms = models.BigIntegerField(default=0, help_text="sync: the limit's exchange interval, ms.")

    class Meta:
        ordering = ["at", "slot", "entry_id"]
        constraints = [
            models.UniqueConstraint(fields=["slot", "entry_id", "at"], name="decision_event_unique"),
        ]
        indexes = [
            models.Index(fields=["slot", "at", "entry_id"], name="decision_event_slot_at"),
            models.Index(fields=["at"], name="decision_event_at"),
            models.Index(fields=["customer", "at"], name="decision_event_customer_at"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.customer} {self.limit} @ {self.at:%Y-%m-%d %H:%M:%S}"


class AuditRun(models.Model):
    """One run of `audit_quality` (by hand or the daily job): its range and filters, how long it took, what it
    read and the report (AuditReport.to_json(), apps/quality/analysis) with every violation."""

    start = models.DateTimeField(help_text="Range audited: from (included), UTC.")
    end = models.DateTimeField(help_text="Range audited: to (excluded), UTC.")
    filters = models.JSONField(default=dict, blank=True, help_text="customer, limit, group as given.")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True, help_text="Empty while running, or if it failed.")
    events = models.PositiveBigIntegerField(default=0, help_text="Log entries read.")
    violations = models.PositiveIntegerField(default=0)
    degraded_minutes = models.PositiveIntegerField(
        default=0, help_text="Customer x operation x minutes with decisions made without Redis (not in the log)."
    )
    report = models.JSONField(default=dict, blank=True)
    trigger = models.CharField(max_length=16, default="command", help_text="command or job.")

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"audit {self.start:%Y-%m-%d %H:%M} to {self.end:%Y-%m-%d %H:%M}: {self.violations} violations"


class LogCheck(models.Model):
    """The loss check of one customer x operation x UTC minute (services/losses.py): the decisions the check
    script counted as logged (UsageMinute.logged) against the entries drained. A positive difference is entries
    lost (trimmed by the stream's cap before a drain, or Redis lost); negative, entries whose usage was lost."""

    minute = models.BigIntegerField(help_text="epoch_ms // 60000 (UTC).")
    customer = models.TextField()
    operation = models.TextField()
    usage_logged = models.BigIntegerField(default=0)
    drained = models.BigIntegerField(default=0)
    difference = models.BigIntegerField(default=0, help_text="usage_logged - drained.")
    checked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-minute", "customer", "operation"]
        constraints = [
            models.UniqueConstraint(fields=["minute", "customer", "operation"], name="log_check_unique"),
        ]
        indexes = [
            models.Index(fields=["minute"], condition=~models.Q(difference=0), name="log_check_differences"),
        ]

    def __str__(self) -> str:
        return f"{self.customer} {self.operation} minute {self.minute}: {self.difference:+d}"
