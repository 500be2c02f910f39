"""Admin for access rules: their list and page, and the two inlines of a customer's page (apps/console/admin.py),
one for the rules operators make here (or by YAML) and one, read-only, for those the external source owns."""

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.text import Truncator

from apps.common.admin_inlines import ReadOnlyTabularInline
from apps.history.admin import HistoryAdminMixin
from apps.limits.choices import RuleSource
from apps.limits.models import AccessRule

REASON_PREVIEW_CHARS = 80


def reason_preview(reason: str) -> str:
    """A reason cut short for a list column (access rules, overrides)."""
    return Truncator(reason).chars(REASON_PREVIEW_CHARS)


class ExpiryFilter(admin.SimpleListFilter):
    title = "expiry"
    parameter_name = "expiry"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("current", "not expired"), ("expired", "expired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AccessRule]) -> QuerySet[AccessRule]:
        now = timezone.now()
        if self.value() == "current":
            return queryset.filter(Q(expires__isnull=True) | Q(expires__gt=now))
        if self.value() == "expired":
            return queryset.filter(expires__lte=now)
        return queryset


SOURCE_RULE_NOTE = (
    "From the external source document: the next refresh replaces it, so it is shown here, not edited. Change or "
    "remove it in the source. Deleted here, it is back at the next refresh while the source lists it."
)


@admin.register(AccessRule)
class AccessRuleAdmin(HistoryAdminMixin, admin.ModelAdmin):
    list_display = ("action", "matcher", "operation", "expires", "source", "reason_preview", "created_at")
    list_filter = ("action", "source", ExpiryFilter, ("operation", admin.RelatedOnlyFieldListFilter))
    list_select_related = ("customer", "operation")
    search_fields = ("customer__external_id", "ip", "api_key__prefix", "reason")
    autocomplete_fields = ("customer", "api_key", "operation")
    readonly_fields = ("source",)
    date_hierarchy = "created_at"
    fieldsets = (
        (None, {"fields": ("action", "source")}),
        (
            "Matches",
            {
                "fields": ("customer", "ip", "api_key"),
                "description": "Every matcher that is set must match; set at least one.",
            },
        ),
        ("Scope and expiry", {"fields": ("operation", "expires", "reason")}),
    )

    def has_change_permission(self, request: HttpRequest, obj: AccessRule | None = None) -> bool:
        # The source owns its rules: an edit here would be undone by the next refresh without a word.
        if obj is not None and obj.source == RuleSource.EXTERNAL:
            return False
        return super().has_change_permission(request, obj)

    def get_fieldsets(self, request: HttpRequest, obj: AccessRule | None = None) -> Any:
        if obj is None or obj.source != RuleSource.EXTERNAL:
            return self.fieldsets
        (_, first), *rest = self.fieldsets
        return (("From the external source", {**first, "description": SOURCE_RULE_NOTE}), *rest)

    @admin.display(description="matches")
    def matcher(self, rule: AccessRule) -> str:
        return rule.matcher_summary

    @admin.display(description="reason")
    def reason_preview(self, rule: AccessRule) -> str:
        return reason_preview(rule.reason)


class AccessRuleInline(admin.TabularInline):
    """A customer's access rules on its page: those made in the admin (or by YAML), which operators edit here."""

    model = AccessRule
    fk_name = "customer"
    fields = ("action", "operation", "ip", "api_key", "expires", "reason")
    autocomplete_fields = ("operation", "api_key")
    extra = 0
    show_change_link = True
    verbose_name_plural = "access rules"

    def get_queryset(self, request: HttpRequest) -> QuerySet[AccessRule]:
        return super().get_queryset(request).filter(source=RuleSource.ADMIN)


class SourceAccessRuleInline(ReadOnlyTabularInline):
    """A customer's access rules from the external source, read-only: each refresh replaces them."""

    model = AccessRule
    fk_name = "customer"
    fields = ("action", "operation", "ip", "api_key", "expires", "reason")
    verbose_name_plural = "access rules from the external source (replaced at each refresh; edit them there)"

    def get_queryset(self, request: HttpRequest) -> QuerySet[AccessRule]:
        return super().get_queryset(request).filter(source=RuleSource.EXTERNAL)
