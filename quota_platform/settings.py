"""The one settings module. Every value comes from the environment (django-environ), each documented in
`.env.example`. A `.env` file in the project root (or the file ENV_FILE names; ENV_FILE="" reads none) is read
too, without overriding variables already set.
"""

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from quota_platform.env import BASE_DIR, env
from quota_platform.serving import BIND, LOG_LEVEL, PORT, WEB_CONCURRENCY  # noqa: F401 - settings.BIND etc.

# Runtime state of the embedded default (SQLite file, broker folder, snapshot file, static files).
VAR_DIR = Path(env.str("VAR_DIR", default=str(BASE_DIR / "var")))

# ---- Core ----------------------------------------------------------------------------------------
DEBUG = env.bool("DEBUG", default=False)

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY and not DEBUG:
    raise ImproperlyConfigured(
        "SECRET_KEY is not set. Set it in the environment or in .env "
        "(`make run` writes one for you), or set DEBUG=true for a throwaway development key."
    )
SECRET_KEY = SECRET_KEY or "insecure-development-key-only-used-with-debug-on"  # only with DEBUG on

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    # Third party
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "axes",
    # Ours
    *(f"apps.{app}" for app in ("common", "api", "customers", "limits", "apikeys", "enforcement", "usage", "toggles")),
    *(f"apps.{app}" for app in ("ops", "reports", "console", "history", "accounts", "quality", "alerts")),
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After authentication: the change history names the logged-in user as the author of a change.
    "apps.history.middleware.HistoryRequestMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns lockouts into a 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "quota_platform.urls"
WSGI_APPLICATION = "quota_platform.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# ---- Storage: PostgreSQL in production, SQLite for the embedded default --------------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
# No ATOMIC_REQUESTS: services that need a transaction say so with @transaction.atomic.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # libpq waits forever for an unreachable host; probes and jobs should give up and say so.
    DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env.int("DATABASE_CONNECT_TIMEOUT", default=3)
elif DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default's API, workers, beat and admin all write one file. Stock SQLite refused them with
    # "database is locked": a deferred transaction that read first cannot wait to write (SQLite fails it at once
    # rather than deadlock), and in the rollback journal every reader holds off the writer. IMMEDIATE takes the
    # write lock at BEGIN, where the busy timeout lets it queue; WAL lets reads go on beside the one writer.
    # synchronous=NORMAL skips an fsync per commit: a crash leaves the file consistent, a power cut may lose the
    # last commits (a demo's, not production's). tests/ops/test_sqlite_load.py measures before and after.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,  # seconds a write waits for the lock: rollups take well under one
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis holds the counters (COUNTERS_REDIS_URL; redis+cluster://host:port,… names a Redis Cluster) and the cache
# (REDIS_URL: one Redis, never a cluster). With neither set, the embedded default keeps the counters in process.
REDIS_URL = env.str("REDIS_URL", default="")
COUNTERS_REDIS_URL = env.str("COUNTERS_REDIS_URL", default="") or REDIS_URL  # empty means REDIS_URL too
# A check waits at most this long for Redis before its limits' failure policies apply.
QUOTA_REDIS_TIMEOUT_MS = env.int("QUOTA_REDIS_TIMEOUT_MS", default=50)
# Batches get longer: a 1000-item script costs tens of ms of Redis CPU, and after a timeout the failure
# policies decide although the script may still run, so a batch should time out only when Redis is gone.
QUOTA_REDIS_BATCH_TIMEOUT_MS = env.int("QUOTA_REDIS_BATCH_TIMEOUT_MS", default=1000)


def _redis_cache(read_timeout_ms: int) -> dict[str, object]:
    connect_s, read_s = QUOTA_REDIS_TIMEOUT_MS / 1000, read_timeout_ms / 1000
    options = {"SOCKET_CONNECT_TIMEOUT": connect_s, "SOCKET_TIMEOUT": read_s}
    return {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "qp-cache",
        "OPTIONS": options,
    }


# The engine's batch calls (apps/enforcement/counters/guarded_store.py) use the second pool: same Redis, a longer
# read timeout.
CACHES = (
    {"default": _redis_cache(QUOTA_REDIS_TIMEOUT_MS), "engine-batch": _redis_cache(QUOTA_REDIS_BATCH_TIMEOUT_MS)}
    if REDIS_URL
    else {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
)

# ---- Auth and security ---------------------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}Validator"}
    for name in ("UserAttributeSimilarity", "MinimumLength", "CommonPassword", "NumericPassword")
]

# Admin brute-force protection: lock a username+address pair, never forever.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_HOURS", default=0.25)
if AXES_COOLOFF_TIME <= 0:
    raise ImproperlyConfigured("AXES_COOLOFF_HOURS must be more than 0: a lockout must end by itself.")
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Each attempt during a lockout restarts the cool-off; the lockout page says so and when it ends.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = True
AXES_LOCKOUT_CALLABLE = "apps.accounts.lockout.lockout_response"
AXES_VERBOSE = False
# Proxies that append the client to X-Forwarded-For (0: the TCP peer), so lockouts count per real client.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
AXES_CLIENT_IP_CALLABLE = "apps.accounts.client_ip.client_ip_address"

# Production is HTTPS. The embedded `make run` turns this off in its .env.
SECURE_HTTPS = env.bool("SECURE_HTTPS", default=not DEBUG)
SECURE_SSL_REDIRECT = SECURE_HTTPS
# Load balancers probe these over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SESSION_COOKIE_SECURE = SECURE_HTTPS
CSRF_COOKIE_SECURE = SECURE_HTTPS
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if SECURE_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HTTPS
SECURE_HSTS_PRELOAD = SECURE_HTTPS
SECURE_CONTENT_TYPE_NOSNIFF = True
if env.bool("USE_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# ---- Serving: where `make run` (manage.py run_platform) listens, and its web workers -----------------------
# BIND, PORT and WEB_CONCURRENCY (imported above) are read in quota_platform/serving.py, which gunicorn's config
# reads too: one place for both.

# ---- Internationalisation ------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# ---- Static files (served by WhiteNoise, so the admin works with DEBUG off) ----------------------
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# ---- REST framework and OpenAPI ------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["apps.api.renderers.OrjsonRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.api.renderers.OrjsonParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "apps.api.exception_handlers.error_response_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Quota Platform API",
    "DESCRIPTION": "Ask before doing work: quota and rate-limit decisions for multi-tenant services. New here? Follow "
    "the README's five-minute tour. Send `Authorization: Bearer <api key>` on every call (Authorize button); errors "
    'always have one shape: `{"error": {"code", "message", "fields"}}`.',
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.api.schema.strict_request_bodies",
    ],
}

# ---- Celery (schedules are django-celery-beat rows, created by setup_periodic_tasks) -------------
# Without a broker URL the embedded default passes messages through a local folder.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
EMBEDDED_BROKER = CELERY_BROKER_URL == "filesystem://"
if EMBEDDED_BROKER:
    # The folder transport ignores the host, but kombu warns "No hostname was supplied" at every start without one.
    CELERY_BROKER_URL = "filesystem://localhost/"
    _broker_dir = VAR_DIR / "celery-broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "control_folder": str(VAR_DIR / "celery-control"),
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BEAT_SYNC_EVERY = 1  # beat writes each job's last run back as it sends it, not every 3 minutes
# Three queues, so the accounting jobs never wait behind a slow alert receiver or an hours-long export: "celery" (the
# beat jobs: flush, rollup, drain, purge, refresh, the alert job), "deliveries" (alert emails and webhooks) and
# "reports" (usage exports run as background jobs). A worker started without -Q consumes them all; give the default
# queue a worker of its own (-Q celery) and the others theirs (-Q deliveries, -Q reports, or -Q deliveries,reports).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = {
    name: {"exchange": name, "routing_key": name} for name in (CELERY_TASK_DEFAULT_QUEUE, "deliveries", "reports")
}
CELERY_TASK_ROUTES = {"apps.alerts.tasks.*": {"queue": "deliveries"}, "apps.reports.tasks.*": {"queue": "reports"}}

# ---- Quota platform ------------------------------------------------------------------------------


def _one_of(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env.str(name, default=default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}.")
    return value


QUOTA_KEY_PREFIX = env.str("QUOTA_KEY_PREFIX", default="qp")  # of every engine key: platforms may share a Redis
DECISION_LOG_MAX_PER_SLOT = env.int("DECISION_LOG_MAX_PER_SLOT", default=200_000)  # each log stream's cap (MAXLEN ~)
# Seconds between heartbeats of each API instance (the `local` failure policy divides limits by live ones).
QUOTA_HEARTBEAT_S = env.float("QUOTA_HEARTBEAT_S", default=10.0)
# Redis circuit breaker: failures in a row before it opens, and seconds it stays open before one probe.
QUOTA_BREAKER_FAILURES = env.int("QUOTA_BREAKER_FAILURES", default=3)
QUOTA_BREAKER_OPEN_S = env.float("QUOTA_BREAKER_OPEN_S", default=2.0)
# Bearer token required to scrape /metrics ("" = open: then expose /metrics only on an internal network).
QUOTA_METRICS_TOKEN = env.str("QUOTA_METRICS_TOKEN", default="")
# Usage retention per table, in days (0 = keep forever).
QUOTA_RETENTION_MINUTE_DAYS = env.int("QUOTA_RETENTION_MINUTE_DAYS", default=14)
QUOTA_RETENTION_HOUR_DAYS = env.int("QUOTA_RETENTION_HOUR_DAYS", default=400)
QUOTA_RETENTION_DAY_DAYS = env.int("QUOTA_RETENTION_DAY_DAYS", default=0)
DECISION_LOG_RETENTION_DAYS = env.int("DECISION_LOG_RETENTION_DAYS", default=14)  # apps/quality's log, whole days
# Days counter records are kept: a limit whose records must reach further back is not durable.
QUOTA_COUNTER_RECORD_DAYS = env.int("QUOTA_COUNTER_RECORD_DAYS", default=35)
# Seconds between background writes of bookkeeping (API keys' last use, new customers); 0 = on demand.
QUOTA_BOOKKEEPING_FLUSH_S = env.float("QUOTA_BOOKKEEPING_FLUSH_S", default=30.0)
# Seconds between the rounds in which each process writes the usage it tallied (every decision's: the decision
# ledger, apps/enforcement/ledger) to PostgreSQL; a process killed outright loses at most one. 2 s keeps that loss
# (and what a Redis loss can re-grant on durable counters) well under the ~5 s target for half a transaction per
# second per process (docs/capacity.md); 0 = on demand (tests).
QUOTA_LEDGER_FLUSH_S = env.float("QUOTA_LEDGER_FLUSH_S", default=2.0)
# Failed API-key attempts per client address (after TRUSTED_PROXY_COUNT proxies) and per presented key
# prefix: past the limit within the window, further failures answer 429 (0 = off). A valid key is never refused.
QUOTA_BAD_KEY_LIMIT = env.int("QUOTA_BAD_KEY_LIMIT", default=20)
QUOTA_BAD_KEY_WINDOW_S = env.float("QUOTA_BAD_KEY_WINDOW_S", default=60.0)
# POST /api/v1/check and /check/batch answered by the lean WSGI door (quota_platform/lean_door.py), the same answers
# for less CPU; false sends them through Django's middleware and DRF like every other endpoint.
QUOTA_LEAN_DOOR = env.bool("QUOTA_LEAN_DOOR", default=True)
# A check on an operation that is not configured: "allow" (no limits apply, the answer warns) or "reject" (404).
QUOTA_UNKNOWN_OPERATIONS = _one_of("QUOTA_UNKNOWN_OPERATIONS", "allow", ("allow", "reject"))
# New customer and operation names one service may bring in per day; past it they are counted as "(other)".
QUOTA_NEW_NAMES_PER_SERVICE_DAY = env.int("QUOTA_NEW_NAMES_PER_SERVICE_DAY", default=1000)
# How often each worker checks whether the configuration changed (seconds; 0 = never, tests only).
QUOTA_SNAPSHOT_POLL_S = env.float("QUOTA_SNAPSHOT_POLL_S", default=0.5)
# Where workers keep the last-known-good config snapshot (an empty QUOTA_SNAPSHOT_PATH= means the default).
QUOTA_SNAPSHOT_PATH = Path(env.str("QUOTA_SNAPSHOT_PATH", default="") or VAR_DIR / "snapshot.json")
# Feature toggles and hot overrides from an external source (the refresh_toggles beat job):
# a file path or an https:// URL serving the JSON document; "" = no source, the job does nothing.
QUOTA_TOGGLES_SOURCE = env.str("QUOTA_TOGGLES_SOURCE", default="")
# The last document applied from the source; applied again while the source is unreachable or invalid.
QUOTA_TOGGLES_LKG_PATH = Path(env.str("QUOTA_TOGGLES_LKG_PATH", default="") or VAR_DIR / "toggles-lkg.json")
# Allow plain http:// and loopback/private/link-local source addresses (local development and tests only).
QUOTA_TOGGLES_ALLOW_PRIVATE = env.bool("QUOTA_TOGGLES_ALLOW_PRIVATE", default=False)
# Seconds to wait for the source (connect, each read, and the whole download).
QUOTA_TOGGLES_TIMEOUT_S = env.float("QUOTA_TOGGLES_TIMEOUT_S", default=5.0)

# Gateway forward-auth (/api/v1/authz): the customer and client-address headers, what a path no route maps gets,
# and the routes: a JSON list of {"method", "path" (regex, may capture (?P<resource>...)), "operation"}.
QUOTA_AUTHZ_CUSTOMER_HEADER = env.str("QUOTA_AUTHZ_CUSTOMER_HEADER", default="X-Quota-Customer")
QUOTA_AUTHZ_IP_HEADER = env.str("QUOTA_AUTHZ_IP_HEADER", default="X-Real-IP")
QUOTA_AUTHZ_UNMATCHED = _one_of("QUOTA_AUTHZ_UNMATCHED", "allow", ("allow", "deny"))
QUOTA_AUTHZ_ROUTES = env.str("QUOTA_AUTHZ_ROUTES", default="[]")

# Alerts (apps/alerts): webhook receivers on private or loopback addresses or plain http:// only when true (tests,
# a trusted LAN); seconds one webhook attempt may take in all (connecting, sending, the whole answer); attempts per
# notification before it is marked failed. Email goes through EMAIL_URL (smtp+tls://user:pass@host:587), each SMTP
# operation waiting EMAIL_TIMEOUT seconds at most (Django's default waits for ever).
QUOTA_ALERTS_WEBHOOK_ALLOW_PRIVATE = env.bool("QUOTA_ALERTS_WEBHOOK_ALLOW_PRIVATE", default=False)
QUOTA_ALERTS_WEBHOOK_TIMEOUT_S = env.float("QUOTA_ALERTS_WEBHOOK_TIMEOUT_S", default=5.0)
QUOTA_ALERTS_DELIVERY_ATTEMPTS = env.int("QUOTA_ALERTS_DELIVERY_ATTEMPTS", default=6)
if QUOTA_ALERTS_WEBHOOK_TIMEOUT_S <= 0 or QUOTA_ALERTS_DELIVERY_ATTEMPTS < 1:
    raise ImproperlyConfigured(
        "QUOTA_ALERTS_WEBHOOK_TIMEOUT_S must be above 0 and QUOTA_ALERTS_DELIVERY_ATTEMPTS at least 1, not "
        f"{QUOTA_ALERTS_WEBHOOK_TIMEOUT_S:g} and {QUOTA_ALERTS_DELIVERY_ATTEMPTS}."
    )
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
EMAIL_TIMEOUT = env.float("EMAIL_TIMEOUT", default=10.0)
DEFAULT_FROM_EMAIL = SERVER_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="quota-platform@localhost")

# ---- Logging -------------------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"quiet_4xx": {"()": "apps.common.log_filters.ClientErrorsAtDebug"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["quiet_4xx"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}
