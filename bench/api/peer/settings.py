"""Settings of the peer project: the least Django + DRF needs to serve a JSON POST. No database, no sessions.

Environment: REDIS_URL (required), PEER_KEY_PREFIX (every Redis key written starts with it),
PEER_RATE (django-ratelimit rate, e.g. 100000/m), SECRET_KEY.
"""

import os

DEBUG = False
SECRET_KEY = os.environ.get("SECRET_KEY") or "bench-peer-not-a-secret"  # noqa: S105 - loopback-only benchmark
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = ["rest_framework", "django_ratelimit"]
MIDDLEWARE = ["django.middleware.security.SecurityMiddleware", "django.middleware.common.CommonMiddleware"]
ROOT_URLCONF = "bench.api.peer.urls"
WSGI_APPLICATION = "bench.api.peer.wsgi.application"
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True
TIME_ZONE = "UTC"

REDIS_URL = os.environ["REDIS_URL"]
PEER_KEY_PREFIX = os.environ.get("PEER_KEY_PREFIX", "qp-bench-peer")
PEER_RATE = os.environ.get("PEER_RATE", "100000/m")

CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": PEER_KEY_PREFIX + "-cache",
    }
}
RATELIMIT_USE_CACHE = "default"
# Over the limit: DRF's Throttled (429), as a service would answer.
RATELIMIT_EXCEPTION_CLASS = "bench.api.peer.views.RateLimited"

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "UNAUTHENTICATED_USER": None,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
