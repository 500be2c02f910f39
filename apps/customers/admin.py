"""Admin for plans and customers. A customer's page carries its overrides, access rules and API keys, and links
to its usage page (charts, live limits, monopolization score) and quick actions (apps/usage/admin/)."""

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from apps.apikeys.models import ApiKey
from apps.customers.models import Customer, Plan
from apps.history.admin import HistoryAdminMixin
from apps.limits.models import AccessRule, Override
from apps.usage.admin.actions import boost_view, refused, rule_view, unblock_view
from apps.usage.admin.customer_page import customer_usage_view


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
        pages: list[tuple[str, Callable[..., HttpResponse], str]] = [
            ("<path:object_id>/usage/", customer_usage_view, "usage"),
            ("<path:object_id>/boost/<int:limit_id>/", boost_view, "boost"),
            ("<path:object_id>/unblock/<int:limit_id>/", unblock_view, "unblock"),
            ("<path:object_id>/rule/<str:action>/", rule_view, "rule"),
        ]
        ours = [
            path(route, self.admin_site.admin_view(self._customer_page(view)), name=f"customers_customer_{name}")
            for route, view, name in pages
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
