from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

# The check endpoints come first: URL resolution walks this list on every request.
urlpatterns = [
    path("api/v1/", include("apps.enforcement.urls")),
    path("api/v1/", include("apps.reports.urls")),
    path("api/v1/", include("apps.toggles.urls")),
    path("", include("apps.ops.urls")),
    # Before the admin's own URLs: its catch-all would answer /admin/console/ first.
    path("admin/console/", include("apps.console.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="schema"),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="schema", authentication_classes=[], permission_classes=[]),
        name="api-docs",
    ),
]

# Under /api/, errors Django answers before any view (unknown path, bad Host, a crash) come in the one error shape.
handler400 = "apps.api.error_views.bad_request"
handler403 = "apps.api.error_views.permission_denied"
handler404 = "apps.api.error_views.page_not_found"
handler500 = "apps.api.error_views.server_error"
