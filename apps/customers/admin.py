"""Admin for plans. The customer's page (with its overrides, access rules and keys inline, its usage page and
quick actions) is assembled by the operator console from every app's parts: apps/console/admin.py."""

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from apps.customers.models import Plan
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
