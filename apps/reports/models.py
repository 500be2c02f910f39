from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import models

from apps.common.models import TimeStampedModel
from apps.reports.exports import FORMATS
from apps.reports.filters import UsageFilters
from apps.usage.selectors import USAGE_TABLES


class ExportJob(TimeStampedModel):
    """A usage report too large to build while the browser waits: written by a Celery task into a file
    under VAR_DIR/exports, with its progress in rows_done / rows_total.

    The filters are copied here (customers and operations by name, like the usage tables), so a job
    reads the same rows whatever is renamed later. `updated_at` moves with every progress update: a
    running job whose worker died stops moving, and another run may take it over.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    granularity = models.CharField(max_length=10, choices=[(name, name) for name in USAGE_TABLES])
    start = models.DateTimeField(help_text="First bucket included (UTC).")
    end = models.DateTimeField(help_text="End of the range, excluded (UTC).")
    customers = models.JSONField(default=list, blank=True, help_text="Customer ids; empty: every customer.")
    operations = models.JSONField(default=list, blank=True, help_text="Operation names; empty: every operation.")
    services = models.JSONField(default=list, blank=True, help_text="Calling services' names; empty: every one.")
    api_keys = models.JSONField(default=list, blank=True, help_text="API key prefixes; empty: every key.")
    format = models.CharField(max_length=10, choices=[(name, f.label) for name, f in FORMATS.items()])
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    rows_done = models.PositiveBigIntegerField(default=0)
    rows_total = models.PositiveBigIntegerField(null=True, blank=True, help_text="Counted when the job starts.")
    file_name = models.CharField(max_length=200, blank=True, help_text="The finished file, in VAR_DIR/exports.")
    error = models.TextField(blank=True, help_text="Why the job failed, in words.")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "usage export"
        verbose_name_plural = "usage exports"
        # The roles migration grants reports.export_usage to analysts by this codename: keep it.
        permissions = [("export_usage", "Can export usage reports")]
        constraints = [
            models.CheckConstraint(condition=models.Q(end__gt=models.F("start")), name="export_job_end_after_start"),
        ]

    def __str__(self) -> str:
        return f"Export #{self.pk}: {self.granularity} {self.range_text} as {self.format}"

    @property
    def range_text(self) -> str:
        """The range as it was chosen: whole UTC days as first and last day included ('2026-03-01 to 2026-03-04
        (UTC)', or one day), any other range by its bounds, the end excluded."""
        start, end = self.start.astimezone(dt.UTC), self.end.astimezone(dt.UTC)
        if start.time() == end.time() == dt.time():
            last = (end - dt.timedelta(days=1)).date()
            days = f"{start:%Y-%m-%d}" if last == start.date() else f"{start:%Y-%m-%d} to {last:%Y-%m-%d}"
            return f"{days} (UTC)"
        return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC (end excluded)"

    @property
    def filters(self) -> UsageFilters:
        return UsageFilters(
            granularity=self.granularity,
            start=self.start,
            end=self.end,
            customers=tuple(self.customers),
            operations=tuple(self.operations),
            services=tuple(self.services),
            api_keys=tuple(self.api_keys),
        )

    @property
    def percent(self) -> int | None:
        """Progress in whole percent; None while the rows are not counted yet."""
        if self.status == self.Status.DONE:
            return 100
        if not self.rows_total:
            return None
        return min(99, self.rows_done * 100 // self.rows_total)
