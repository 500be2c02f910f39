"""Read-only admin for the usage tables, tuned for tables too big to count: per customer, per calling service and
per API key alike (list filters for the service and the key, exact searches on each)."""

from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connections
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

from apps.usage.models import QuarantinedUsage, UsageBucket, UsageDay, UsageHour, UsageMinute, UsageWriter
from apps.usage.selectors import usage_callers
from apps.usage.services.writers import BUCKET_MINUTES, incomplete_minutes
from apps.usage.vocabulary import REPORTED

# What the list shows for a row made without a service or key (the admin's session, or counted before they were).
NONE_SHOWN = "(none)"
NONE_VALUE = "-"  # the filter's value for "" (an empty query value would mean no filter)


class _CallerFilter(admin.SimpleListFilter):
    """Rows of one calling service (or key prefix). Its choices come from the day table, small at any scale (one
    row per customer x operation x service x key x day), so listing them never reads the minute table."""

    field = "service"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(value or NONE_VALUE, value or NONE_SHOWN) for value in usage_callers(field=self.field)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Model]) -> QuerySet[Model]:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(**{self.field: "" if value == NONE_VALUE else value})


class ServiceFilter(_CallerFilter):
    title = "calling service"
    parameter_name = "service"
    field = "service"


class ApiKeyFilter(_CallerFilter):
    title = "API key (prefix)"
    parameter_name = "api_key"
    field = "api_key"


# Counting stops here: above it the changelist shows the planner's estimate (or this number).
COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    """Never runs COUNT(*) over a whole table (healthchecks' PingsAdmin idea).

    It counts at most COUNT_CAP + 1 rows. Beyond that the total is PostgreSQL's row estimate for
    an unfiltered list, and COUNT_CAP for a filtered one, so the last pages may be approximate.
    """

    # The admin pages the changelist's queryset (a Paginator also takes plain sequences).
    object_list: QuerySet[Model]

    @cached_property
    def count(self) -> int:
        counted = self.object_list[: COUNT_CAP + 1].count()
        if counted <= COUNT_CAP:
            return counted
        return max(COUNT_CAP, self._table_estimate())

    def _table_estimate(self) -> int:
        rows = self.object_list
        connection = connections[rows.db]
        if rows.query.where or connection.vendor != "postgresql":
            return 0
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [rows.model._meta.db_table])
            row = cursor.fetchone()
        return int(row[0]) if row else 0


class UsageAdmin(admin.ModelAdmin):
    list_display = (
        "bucket",
        "customer",
        "operation",
        "service",
        "api_key",
        *REPORTED,
        "costs",
        "complete",
    )
    list_filter = (("bucket", admin.DateFieldListFilter), ServiceFilter, ApiKeyFilter)
    # Exact matches only: customers use the (customer, operation, bucket, ...) index; icontains would scan.
    search_fields = ("customer__exact", "operation__exact", "service__exact", "api_key__exact")
    search_help_text = "An exact customer id, operation name, calling service's name or API key prefix."
    paginator = CappedCountPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        # The possibly incomplete minutes, read once per page (a few per silent writer: services/writers.py).
        self._incomplete = incomplete_minutes(0, 2**40)
        return super().changelist_view(request, extra_context)

    @admin.display(description="Complete", boolean=True)
    def complete(self, row: UsageBucket) -> bool:
        """False: the bucket may lack what an API process killed outright had not written yet."""
        size = BUCKET_MINUTES[{UsageMinute: "minute", UsageHour: "hour", UsageDay: "day"}[type(row)]]
        start = int(row.bucket.timestamp()) // 60
        return not any(start <= minute < start + size for minute in getattr(self, "_incomplete", ()))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(UsageWriter)
class UsageWriterAdmin(admin.ModelAdmin):
    """The processes writing usage from their ledgers; a SILENT one stopped without a graceful exit, and up to one
    interval of its decisions may be missing from the minutes around its last round (services/writers.py)."""

    list_display = ("name", "flushed_at", "interval_s", "stopped_at", "silent_since")
    list_filter = (("silent_since", admin.EmptyFieldListFilter), ("stopped_at", admin.EmptyFieldListFilter))
    readonly_fields = list_display

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


admin.site.register(UsageMinute, UsageAdmin)
admin.site.register(UsageHour, UsageAdmin)
admin.site.register(UsageDay, UsageAdmin)


@admin.register(QuarantinedUsage)
class QuarantinedUsageAdmin(admin.ModelAdmin):
    """Rows the flush or the ledger set aside (apps/common/quarantine.py): to read, never to edit. The table
    stays small, so plain counting is fine; rows go with the minute retention (usage_purge)."""

    list_display = ("quarantined_at", "writer", "key", "error")
    list_filter = ("writer",)
    search_fields = ("key",)
    readonly_fields = ("quarantined_at", "writer", "minute", "key", "row", "error")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
