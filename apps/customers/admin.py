"""Admin for plans and customers. A customer's page carries its overrides, access rules and API keys (each
app's own inline), and links to the operator console's pages under it: its usage page (charts, live limits,
monopolization score) and quick actions, mounted here by URLconf (apps/console/urls.py).
"""

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, URLResolver, include, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.module_loading import import_string

from apps.apikeys.admin import ApiKeyInline
from apps.common.exceptions import ApplicationError
from apps.customers.models import Customer, Plan
from apps.history.admin import HistoryAdminMixin
from apps.limits.admin import AccessRuleInline, OverrideInline


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
    list_display = ("external_id", "name", "plan", "timezone", "active", "created_at", "usage_link")
    list_filter = ("active", "plan")
    list_select_related = ("plan",)
    search_fields = ("external_id", "name")
    autocomplete_fields = ("plan",)
    date_hierarchy = "created_at"
    fields = ("external_id", "name", "plan", "timezone", "active", "holdings")
    readonly_fields = ("holdings",)
    inlines = (OverrideInline, AccessRuleInline, ApiKeyInline)

    @admin.display(description="holdings")
    def holdings(self, customer: Customer) -> str:
        """What the customer holds of each concurrency limit now: leases and allocations (the live counters)."""
        if not customer.pk:
            return "—"
        # By name, not by import: enforcement imports customers (the console's pages are mounted the same way).
        customer_holdings = import_string("apps.enforcement.selectors.customer_holdings")
        try:
            states = customer_holdings(customer.external_id)
        except ApplicationError as error:  # CountersUnavailable: Redis did not answer; the page still opens
            return f"Live counters cannot be read now: {error}"
        if not states:
            return "No concurrency limit applies to this customer."
        rows = (
            (state.limit.name, state.limit.operation, "—" if state.used is None else state.used,
             state.quantity if state.quantity is not None else "unlimited", state.note)
            for state in states
        )  # fmt: skip
        return format_html(
            "<table><tr><th>limit</th><th>operation</th><th>held</th><th>of</th><th></th></tr>{}</table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="usage")
    def usage_link(self, customer: Customer) -> str:
        return format_html(
            '<a href="{}">charts and limits</a>', reverse("admin:customers_customer_usage", args=[customer.pk])
        )

    # The stubs say list[URLPattern]; the admin site include()s whatever patterns this returns.
    def get_urls(self) -> list[URLPattern | URLResolver]:  # type: ignore[override]
        # By name, not by import: the console imports the other apps and none imports it.
        return [path("", include("apps.console.urls")), *super().get_urls()]
