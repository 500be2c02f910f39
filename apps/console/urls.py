"""The platform's pages in the admin, not any one customer's: every customer's traffic over time and the audits of
the decision log, under /admin/console/ (mounted by quota_platform/urls.py), each behind the admin's login.
"""

from django.urls import path

from apps.console.quality_page import quality_admin_view
from apps.console.traffic_page import traffic_admin_view, traffic_data_admin_view

app_name = "console"

urlpatterns = [
    path("quality/", quality_admin_view, name="quality"),
    path("traffic/", traffic_admin_view, name="traffic"),
    path("traffic/data/", traffic_data_admin_view, name="traffic-data"),
]
