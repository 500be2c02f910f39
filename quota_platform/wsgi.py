"""WSGI entry point. The service API is served through a lean middleware stack.

/api/v1/ requests need none of the admin's middleware (sessions, CSRF, messages, login lockout,
static files): they authenticate with API keys. Routing them to a handler built with only the
security middleware saves a large share of each check's CPU; everything else gets the full stack.
"""

import os
from wsgiref.types import StartResponse, WSGIEnvironment

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application
from django.http import HttpResponseBase

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")

SERVICE_API_PREFIX = "/api/v1/"
SERVICE_API_MIDDLEWARE = ["django.middleware.security.SecurityMiddleware", "django.middleware.common.CommonMiddleware"]


class ServiceApiHandler(WSGIHandler):
    """A WSGI handler whose middleware chain is SERVICE_API_MIDDLEWARE instead of settings.MIDDLEWARE."""

    def load_middleware(self, is_async: bool = False) -> None:
        full = settings.MIDDLEWARE
        settings.MIDDLEWARE = SERVICE_API_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = full


full_application = get_wsgi_application()
service_api_application = ServiceApiHandler()


def application(environ: WSGIEnvironment, start_response: StartResponse) -> HttpResponseBase:
    if environ.get("PATH_INFO", "").startswith(SERVICE_API_PREFIX):
        return service_api_application(environ, start_response)
    return full_application(environ, start_response)
