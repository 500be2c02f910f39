from django.templatetags.static import static
from django.urls import path
from django.views.generic import RedirectView

from apps.ops import views

urlpatterns = [
    path("", views.landing, name="landing"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
    # Browsers ask for /favicon.ico on every page that names no icon (the API's JSON, a 404): the site's icon.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True), name="favicon"),
]
