"""Admin for operations, limits and overrides: the configuration operators edit most (access rules: admin_rules.py).

Saving goes through the model forms, so every Model.clean() rule runs and its errors land on the
field they name. The limit editor's form is in admin_forms.py (key_by choices, match rows, fields hidden per
algorithm by static/limits/limit_editor.js); the YAML import/export pages in admin_yaml.py. The admin site's
titles are set here too.
"""

from typing import Any

from django.contrib import admin
from django.db.models import BooleanField, Count, ExpressionWrapper, Q, QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, path
from django.utils import timezone

from apps.history.admin import HistoryAdminMixin
from apps.limits.admin_forms import LimitAdminForm, OverrideAdminForm
from apps.limits.admin_rules import reason_preview  # importing it registers the access rules' admin too
from apps.limits.admin_yaml import yaml_export_view, yaml_import_view
from apps.limits.models import Limit, Operation, Override
from apps.limits.summaries import limit_summary

admin.site.site_header = "Quota Platform"
admin.site.site_title = "Quota Platform admin"
admin.site.index_title = "Configuration and usage"

UNSAVED_SUMMARY = "Shown once the limit is saved."


@admin.register(Operation)
class OperationAdmin(HistoryAdminMixin, admin.ModelAdmin):
    # Counting annotations drop Meta.ordering (GROUP BY), so the order is given here.
    ordering = ("name",)
    list_display = ("name", "description", "limit_count", "updated_at")
    search_fields = ("name", "description")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Operation]:
        return super().get_queryset(request).annotate(limit_total=Count("limits"))

    @admin.display(description="limits", ordering="limit_total")
    def limit_count(self, operation: Operation) -> int:
        return operation.limit_total  # type: ignore[attr-defined]


@admin.register(Limit)
class LimitAdmin(HistoryAdminMixin, admin.ModelAdmin):
    form = LimitAdminForm
    list_display = ("name", "operation", "summary", "plan", "mode", "updated_at")
    list_filter = (
        "mode",
        "algorithm",
        "on_store_failure",
        ("plan", admin.RelatedOnlyFieldListFilter),
        ("operation", admin.RelatedOnlyFieldListFilter),
    )
    list_select_related = ("operation", "plan")
    search_fields = ("name", "description", "operation__name", "unit")
    autocomplete_fields = ("operation", "plan")
    readonly_fields = ("summary", "created_at", "updated_at")
    fieldsets = (
        ("What", {"fields": ("name", "operation", "plan", "description", "summary")}),
        (
            "How much",
            {
                "fields": ("algorithm", "quantity", "unit", "period_seconds", "calendar_period", "burst"),
                "description": "A calendar limit takes a calendar period and no seconds; every other algorithm "
                "takes a period in seconds (for concurrency: the longest a lease lives). Burst is only for token "
                "and leaky buckets. The fields the chosen algorithm does not use are hidden.",
            },
        ),
        ("Keying and matching", {"fields": ("key_by", "match")}),
        ("Behaviour", {"fields": ("mode", "on_store_failure", "sync_ms", "audit")}),
        ("History", {"fields": ("created_at", "updated_at"), "classes": ("collapse",)}),
    )

    class Media:
        js = ("limits/limit_editor.js",)
        css = {"all": ("limits/limit_editor.css",)}

    def get_urls(self) -> list[URLPattern]:
        def wrap(view: Any) -> Any:
            return self.admin_site.admin_view(lambda request: view(request, self))

        return [
            path("yaml/import/", wrap(yaml_import_view), name="limits_limit_yaml_import"),
            path("yaml/export/", wrap(yaml_export_view), name="limits_limit_yaml_export"),
            *super().get_urls(),
        ]

    @admin.display(description="summary")
    def summary(self, limit: Limit) -> str:
        return limit_summary(limit) if limit.pk else UNSAVED_SUMMARY


class InForceFilter(admin.SimpleListFilter):
    title = "in force"
    parameter_name = "in_force"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "in force now"), ("no", "not in force now")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Override]) -> QuerySet[Override]:
        if self.value() in ("yes", "no"):
            # is_in_force is the annotation OverrideAdmin.get_queryset adds; the plugin checks model fields only.
            return queryset.filter(is_in_force=self.value() == "yes")  # type: ignore[misc]
        return queryset


def in_force_now() -> ExpressionWrapper:
    """True for an override whose start (if any) has come and whose end (if any) has not."""
    now = timezone.now()
    return ExpressionWrapper(
        (Q(starts__isnull=True) | Q(starts__lte=now)) & (Q(ends__isnull=True) | Q(ends__gt=now)),
        output_field=BooleanField(),
    )


@admin.register(Override)
class OverrideAdmin(HistoryAdminMixin, admin.ModelAdmin):
    form = OverrideAdminForm
    list_display = ("customer", "limit", "resource", "amount", "starts", "ends", "in_force", "reason_preview")
    list_filter = (InForceFilter, "unlimited", ("limit", admin.RelatedOnlyFieldListFilter))
    list_select_related = ("customer", "limit")
    search_fields = ("customer__external_id", "customer__name", "limit__name", "resource", "reason")
    autocomplete_fields = ("customer", "limit")
    date_hierarchy = "created_at"
    fieldsets = (
        ("Who and what", {"fields": ("customer", "limit", "resource", "match")}),
        ("How much", {"fields": ("quantity", "burst", "unlimited")}),
        ("When and why", {"fields": ("starts", "ends", "reason")}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Override]:
        return super().get_queryset(request).annotate(is_in_force=in_force_now())

    @admin.display(description="amount")
    def amount(self, override: Override) -> str:
        if override.unlimited:
            return "unlimited"
        parts = [] if override.quantity is None else [f"{override.quantity}"]
        if override.burst is not None:
            parts.append(f"burst {override.burst}")
        return ", ".join(parts)

    @admin.display(description="active now", boolean=True, ordering="is_in_force")
    def in_force(self, override: Override) -> bool:
        return override.is_in_force  # type: ignore[attr-defined]

    @admin.display(description="reason")
    def reason_preview(self, override: Override) -> str:
        return reason_preview(override.reason)


class OverrideInline(admin.TabularInline):
    """A customer's overrides on its page (apps/customers/admin.py)."""

    model = Override
    form = OverrideAdminForm
    fields = ("limit", "resource", "quantity", "burst", "unlimited", "starts", "ends", "match", "reason")
    autocomplete_fields = ("limit",)
    extra = 0
    show_change_link = True
