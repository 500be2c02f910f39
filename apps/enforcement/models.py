from django.db import models


class FallbackCounter(models.Model):
    """What the `database` failure policy counted while Redis was unreachable: one row per counter key
    and minute-aligned window. Purged once the window is over."""

    key = models.CharField(max_length=1024)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField(db_index=True)
    used = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "window_start"], name="fallback_counter_unique")]

    def __str__(self) -> str:
        return f"{self.key} @ {self.window_start:%Y-%m-%d %H:%M}: {self.used}"


class FallbackRequest(models.Model):
    """A request_id the `database` policy already decided, so a retry is not counted twice (kept 10 minutes)."""

    customer = models.CharField(max_length=200)
    request_id = models.CharField(max_length=128)
    allowed = models.BooleanField()
    # The parameters the id was given for (engine/store/plan.request_fingerprint); "" on older rows.
    fingerprint = models.CharField(max_length=16, default="", blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["customer", "request_id"], name="fallback_request_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.customer}/{self.request_id}: {'allowed' if self.allowed else 'refused'}"


class InstanceHeartbeat(models.Model):
    """An API process that is alive: the `local` policy divides each limit by the number seen lately."""

    instance = models.CharField(max_length=100, unique=True)
    seen_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.instance} seen {self.seen_at:%H:%M:%S}"


class RebuildPending(models.Model):
    """A counter spent on outside Redis (the `database` or `local` policy while Redis was away): Redis's copy
    lacks that spending, so it is deleted there and rebuilt from its records once Redis answers again."""

    counter = models.TextField(unique=True, help_text="The counter key without the store prefix.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"rebuild {self.counter}"


class AllocationSet(models.Model):
    """One customer's allocations on one concurrency counter (leases acquired with `"ttl_s": null`), kept here as
    durably as counters: Redis's set is rebuilt from the Allocation rows after a loss (leases/durable.py). Made by
    the customer's first allocation or resync there; `resynced_at` says when the service last set the count."""

    counter = models.TextField(help_text="The concurrency counter key without the store prefix.")
    customer = models.CharField(max_length=200, db_index=True)
    limit = models.CharField(max_length=200, db_index=True)
    resynced_at = models.DateTimeField(null=True, blank=True, help_text="When the service last resynced the count.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["counter", "customer"], name="allocation_set_unique")]

    def __str__(self) -> str:
        return f"{self.limit} / {self.customer}"


class Allocation(models.Model):
    """An allocation held: its member in the concurrency set (the lease id's last two parts). Written once Redis
    admitted it, deleted when it is released, replaced as a set by a resync."""

    counter = models.TextField(help_text="The concurrency counter key without the store prefix.")
    member = models.CharField(max_length=300)
    allocation_set = models.ForeignKey(AllocationSet, on_delete=models.CASCADE, related_name="allocations")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["counter", "member"], name="allocation_unique")]

    def __str__(self) -> str:
        return self.member
