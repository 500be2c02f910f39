"""The environment every configuration reads: the process's variables, then a `.env` file in the project root (or
the file ENV_FILE names; ENV_FILE="" reads none), which never overrides a variable already set.

Django's settings (settings.py) and gunicorn's (gunicorn_conf.py, loaded before Django) both read through `env`,
so a value in `.env` reaches gunicorn started on its own too, not only through `make run` or honcho.
"""

import os
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
ENV_FILE = os.environ.get("ENV_FILE", str(BASE_DIR / ".env"))
if ENV_FILE:
    environ.Env.read_env(ENV_FILE, overwrite=False)
