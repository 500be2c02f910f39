"""Where the web server listens and how many workers it runs: read once here, for Django's settings (`make run`,
manage.py run_platform) and for gunicorn's config alike. Each variable is documented in `.env.example`."""

import os

from quota_platform.env import env

PORT = env.int("PORT", default=8000)
BIND = env.str("BIND", default="") or f"127.0.0.1:{PORT}"  # host:port, [v6]:port or unix:/path; wins over PORT
WEB_CONCURRENCY = env.int("WEB_CONCURRENCY", default=os.cpu_count() or 2)  # 1 without Redis: counters in process
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
