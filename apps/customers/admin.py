"""Admin for plans and customers. A customer's page carries its overrides, access rules and API keys."""

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from apps.apikeys.models import ApiKey
from apps.customers.models import Customer, Plan
from apps.limits.models import AccessRule, Override


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    # Counting annotations drop Meta.ordering (GROUP BY), so the order is given here.
    ordering = ("name",)
    list_display = ("name", "description", "customer_count", "limit_count", "updated_at")
    search_fields = ("name", "description")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Plan]:
        return (
            super()
            .get_queryset(request)
            .annotate(customer_total=Count("customers", distinct=True), limit_total=Count("limits", distinct=True))
        )

    @admin.display(description="customers", ordering="customer_total")
    def customer_count(self, plan: Plan) -> int:
        return plan.customer_total  # type: ignore[attr-defined]

    @admin.display(description="limits", ordering="limit_total")
    def limit_count(self, plan: Plan) -> int:
        return plan.limit_total  # type: ignore[attr-defined]


class OverrideInline(admin.TabularInline):
    model = Override
    fields = ("limit", "resource", "quantity", "burst", "unlimited", "starts", "ends", "match", "reason")
    autocomplete_fields = ("limit",)
    extra = 0
    show_change_link = True


class AccessRuleInline(admin.TabularInline):
    model = AccessRule
    fk_name = "customer"
    fields = ("action", "operation", "ip", "api_key", "expires", "reason")
    autocomplete_fields = ("operation", "api_key")
    extra = 0
    show_change_link = True
    verbose_name_plural = "access rules"


class ApiKeyInline(admin.TabularInline):
    """Read-only: keys are issued on the API key add page, which shows the secret once."""

    model = ApiKey
    template = "admin/customers/customer/api_keys_inline.html"
    fields = ("prefix", "name", "service", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    verbose_name_plural = "API keys"

    def has_add_permission(self, request: HttpRequest, obj: Customer | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Customer | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Customer | None = None) -> bool:
        return False


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ("external_id", "name", "plan", "timezone", "active", "created_at")
    list_filter = ("active", "plan")
    list_select_related = ("plan",)
    search_fields = ("external_id", "name")
    autocomplete_fields = ("plan",)
    date_hierarchy = "created_at"
    fields = ("external_id", "name", "plan", "timezone", "active")
    inlines = (OverrideInline, AccessRuleInline, ApiKeyInline)
