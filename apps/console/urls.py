"""The console's pages under a customer in the admin (/admin/customers/customer/<id>/...): its usage page and the
quick actions. The customer admin mounts this URLconf (apps/customers/admin.py), so the URL names live in the
admin's namespace, e.g. admin:customers_customer_usage.

Each page runs as an admin view, for a customer the user may see; otherwise a page says why not.
"""

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.http import HttpRequest, HttpResponse
from django.urls import path

from apps.console.actions import boost_view, refused, rule_view, unblock_view
from apps.console.customer_page import customer_usage_view
from apps.console.quality_page import quality_admin_view
from apps.console.traffic_page import traffic_admin_view, traffic_data_admin_view
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


urlpatterns = [
    # Not a customer's page: the audits of every customer (apps/console/quality_page.py), mounted here with the rest.
    path("quality/", quality_admin_view, name="customers_customer_quality"),
    # Not a customer's page either: every customer's checks over time (apps/console/traffic_page.py).
    path("traffic/", traffic_admin_view, name="customers_customer_traffic"),
    path("traffic/data/", traffic_data_admin_view, name="customers_customer_traffic_data"),
    path("<path:object_id>/usage/", customer_admin_page(customer_usage_view), name="customers_customer_usage"),
    path("<path:object_id>/boost/<int:limit_id>/", customer_admin_page(boost_view), name="customers_customer_boost"),
    path(
        "<path:object_id>/unblock/<int:limit_id>/",
        customer_admin_page(unblock_view),
        name="customers_customer_unblock",
    ),
    path("<path:object_id>/rule/<str:action>/", customer_admin_page(rule_view), name="customers_customer_rule"),
]
