"""The console's pages under a customer in the admin (/admin/customers/customer/<id>/...): its usage page and the
quick actions. The customer's admin (admin.py) puts them among its own URLs, so the names live in the admin's
namespace, e.g. admin:customers_customer_usage.

Each page runs as an admin view, for a customer the user may see; otherwise a page says why not.
"""

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path

from apps.console.actions import boost_view, refused, rule_view, unblock_view
from apps.console.customer_page import customer_usage_view
from apps.customers.models import Customer

CustomerPage = Callable[..., HttpResponse]  # (model_admin, request, customer, **route arguments)


def customer_admin_page(view: CustomerPage) -> Callable[..., HttpResponse]:
    """`view(model_admin, request, customer, **rest)` behind the admin's login, for a customer the user may see."""

    def page(request: HttpRequest, object_id: str, **rest: Any) -> HttpResponse:
        model_admin = admin.site.get_model_admin(Customer)
        customer = model_admin.get_object(request, unquote(object_id))
        if customer is None:
            sentence = f"There is no customer with id {object_id}; it may have been deleted."
            return refused(request, model_admin, "No such customer", sentence, 404)
        if not model_admin.has_view_permission(request, customer):
            sentence = "You may not see this customer: that needs the “Can view customer” permission."
            return refused(request, model_admin, "Not allowed", sentence, 403)
        return view(model_admin, request, customer, **rest)

    return admin.site.admin_view(page)


def customer_page_urls() -> list[URLPattern]:
    return [
        path("<path:object_id>/usage/", customer_admin_page(customer_usage_view), name="customers_customer_usage"),
        path(
            "<path:object_id>/boost/<int:limit_id>/", customer_admin_page(boost_view), name="customers_customer_boost"
        ),
        path(
            "<path:object_id>/unblock/<int:limit_id>/",
            customer_admin_page(unblock_view),
            name="customers_customer_unblock",
        ),
        path("<path:object_id>/rule/<str:action>/", customer_admin_page(rule_view), name="customers_customer_rule"),
    ]
