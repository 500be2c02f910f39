"""Admin for plans and customers. The customer's page is composed by the operator console (apps/console/admin.py):
it carries every app's inline (overrides, access rules, API keys), what the customer holds now, and the console's
pages under it. This module imports no other app, so the apps a customer's page draws on depend on customers one way.
"""

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from apps.customers.models import Customer, Plan
from apps.history.admin import HistoryAdminMixin


@admin.register(Plan)
class PlanAdmin(HistoryAdminMixin, admin.ModelAdmin):
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


@admin.register(Customer)
class CustomerAdmin(HistoryAdminMixin, admin.ModelAdmin):
    list_display = ("external_id", "name", "plan", "timezone", "active", "created_at")
    list_filter = ("active", "plan")
    list_select_related = ("plan",)
    search_fields = ("external_id", "name")
    autocomplete_fields = ("plan",)
    date_hierarchy = "created_at"
    fields = ("external_id", "name", "plan", "timezone", "active")
