"""Read-only admin for the decision log, the audit runs and the loss checks; the log exports stream."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest, StreamingHttpResponse

from apps.quality.exports import FORMATS, export_lines, export_records
from apps.quality.models import AuditRun, DecisionEvent, LogCheck
from apps.usage.admin import CappedCountPaginator


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


def _export(rows: QuerySet[DecisionEvent], fmt: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(export_lines(export_records(rows), fmt), content_type=FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="decision-log.{fmt}"'
    return response


@admin.register(DecisionEvent)
class DecisionEventAdmin(ReadOnlyAdmin):
    """The drained log (apps/quality/services/drain.py); tuned like the usage tables: no full count."""

    list_display = ("at", "kind", "customer", "operation", "limit", "algorithm", "cost", "shadow", "lease", "instance")
    list_filter = (("at", admin.DateFieldListFilter), "kind", "algorithm", "shadow")
    # Exact matches only: they use the (customer, at) index; icontains would scan.
    search_fields = ("customer__exact", "limit__exact", "lease__exact")
    search_help_text = "An exact customer id, limit name or lease member."
    paginator = CappedCountPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    actions = ["export_csv", "export_jsonl"]

    @admin.action(description="Export the selected entries as CSV")
    def export_csv(self, request: HttpRequest, queryset: QuerySet[DecisionEvent]) -> Any:
        return _export(queryset, "csv")

    @admin.action(description="Export the selected entries as JSON lines")
    def export_jsonl(self, request: HttpRequest, queryset: QuerySet[DecisionEvent]) -> Any:
        return _export(queryset, "jsonl")


@admin.register(AuditRun)
class AuditRunAdmin(ReadOnlyAdmin):
    list_display = ("started_at", "start", "end", "trigger", "events", "violations", "degraded_minutes", "finished_at")
    list_filter = ("trigger",)
    readonly_fields = [field.name for field in AuditRun._meta.fields]


@admin.register(LogCheck)
class LogCheckAdmin(ReadOnlyAdmin):
    """Loss check rows; the total of a minute has an empty customer and operation."""

    list_display = ("minute", "customer", "operation", "usage_logged", "drained", "difference", "checked_at")
    search_fields = ("customer__exact",)
    paginator = CappedCountPaginator
    show_full_result_count = False
