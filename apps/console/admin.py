"""The customer's admin page as operators use it, composed here because the console imports the other apps and none
imports it: every app's inline (overrides and access rules, API keys), what the customer holds of each concurrency
limit now, a link to its usage page, and the console's pages under /admin/customers/customer/<id>/ (customer_urls.py).
"""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import URLPattern, URLResolver, reverse
from django.utils.html import format_html, format_html_join

from apps.apikeys.admin import ApiKeyInline
from apps.common.exceptions import ApplicationError
from apps.console.customer_urls import customer_page_urls
from apps.customers.admin import CustomerAdmin
from apps.customers.models import Customer
from apps.enforcement.counters.selectors import customer_holdings
from apps.limits.admin import OverrideInline
from apps.limits.admin_rules import AccessRuleInline, SourceAccessRuleInline

admin.site.unregister(Customer)


@admin.register(Customer)
class CustomerConsoleAdmin(CustomerAdmin):
    readonly_fields = ("holdings",)
    inlines = (OverrideInline, AccessRuleInline, SourceAccessRuleInline, ApiKeyInline)

    def get_list_display(self, request: HttpRequest) -> list[Any]:
        return [*super().get_list_display(request), "usage_link"]

    def get_fields(self, request: HttpRequest, obj: Customer | None = None) -> list[Any]:
        return [*super().get_fields(request, obj), "holdings"]

    @admin.display(description="holdings")
    def holdings(self, customer: Customer) -> str:
        """What the customer holds of each concurrency limit now: leases and allocations (the live counters)."""
        if not customer.pk:
            return "—"
        try:
            states = customer_holdings(customer.external_id)
        except ApplicationError as error:  # CountersUnavailable: Redis did not answer; the page still opens
            return f"Live counters cannot be read now: {error}"
        if not states:
            return "No concurrency limit applies to this customer."
        rows = (
            (
                state.limit.name,
                state.limit.operation,
                "—" if state.used is None else state.used,
                state.quantity if state.quantity is not None else "unlimited",
                state.note,
            )
            for state in states
        )
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
        return [*customer_page_urls(), *super().get_urls()]
