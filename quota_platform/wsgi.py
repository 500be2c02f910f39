"""WSGI entry point. The service API is served through a lean middleware stack, checks through the lean door.

/api/v1/ requests need none of the admin's middleware (sessions, CSRF, messages, login lockout,
static files): they authenticate with API keys. Routing them to a handler built with only the
security middleware saves a large share of each check's CPU; everything else gets the full stack.
`POST /api/v1/check` and `/api/v1/check/batch` skip even that: the lean door (lean_door.py) answers them with
the decision core, unless QUOTA_LEAN_DOOR is off or the request is one Django must answer.
"""

import os
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIEnvironment

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application

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

from quota_platform import lean_door  # noqa: E402  # after get_wsgi_application(): it imports models


def application(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    if environ.get("PATH_INFO", "").startswith(SERVICE_API_PREFIX):
        if settings.QUOTA_LEAN_DOOR:
            answered = lean_door.application(environ, start_response)
            if answered is not None:
                return answered
        return service_api_application(environ, start_response)
    return full_application(environ, start_response)
