"""The customer's page in the admin: its overrides, access rules and API keys inline (each app's own inline),
a link to its usage page, and the pages the console adds under it (usage, quick actions).

It is assembled here rather than in apps/customers: the console imports the other apps, none imports it.
"""

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from apps.apikeys.admin import ApiKeyInline
from apps.console.actions import boost_view, refused, rule_view, unblock_view
from apps.console.customer_page import customer_usage_view
from apps.customers.models import Customer
from apps.history.admin import HistoryAdminMixin
from apps.limits.admin import AccessRuleInline, OverrideInline

# Pages under a customer's admin URL: (route after the customer's id, view, URL name suffix).
CUSTOMER_PAGES: list[tuple[str, Callable[..., HttpResponse], str]] = [
    ("<path:object_id>/usage/", customer_usage_view, "usage"),
    ("<path:object_id>/boost/<int:limit_id>/", boost_view, "boost"),
    ("<path:object_id>/unblock/<int:limit_id>/", unblock_view, "unblock"),
    ("<path:object_id>/rule/<str:action>/", rule_view, "rule"),
]


@admin.register(Customer)
class CustomerAdmin(HistoryAdminMixin, admin.ModelAdmin):
    list_display = ("external_id", "name", "plan", "timezone", "active", "created_at", "usage_link")
    list_filter = ("active", "plan")
    list_select_related = ("plan",)
    search_fields = ("external_id", "name")
    autocomplete_fields = ("plan",)
    date_hierarchy = "created_at"
    fields = ("external_id", "name", "plan", "timezone", "active")
    inlines = (OverrideInline, AccessRuleInline, ApiKeyInline)

    @admin.display(description="usage")
    def usage_link(self, customer: Customer) -> str:
        return format_html(
            '<a href="{}">charts and limits</a>', reverse("admin:customers_customer_usage", args=[customer.pk])
        )

    def get_urls(self) -> list[URLPattern]:
        ours = [
            path(route, self.admin_site.admin_view(self._customer_page(view)), name=f"customers_customer_{name}")
            for route, view, name in CUSTOMER_PAGES
        ]
        return ours + super().get_urls()

    def _customer_page(self, view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        """`view(self, request, customer, **rest)` for a customer the user may see, else a page saying why not."""

        def page(request: HttpRequest, object_id: str, **rest: Any) -> HttpResponse:
            customer = self.get_object(request, unquote(object_id))
            if customer is None:
                sentence = f"There is no customer with id {object_id}; it may have been deleted."
                return refused(request, self, "No such customer", sentence, 404)
            if not self.has_view_permission(request, customer):
                sentence = "You may not see this customer: that needs the “Can view customer” permission."
                return refused(request, self, "Not allowed", sentence, 403)
            return view(self, request, customer, **rest)

        return page
