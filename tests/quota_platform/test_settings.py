"""Settings read from the environment: production defaults are safe."""

import secrets
import subprocess
import sys

from tests.quota_platform.processes import run_in_repository

PRODUCTION_ENV = {
    "ALLOWED_HOSTS": "quota.example.com",
    "DATABASE_URL": "postgres://quota@db.internal:5432/quota",
    "REDIS_URL": "redis://redis.internal:6379/0",
    "CELERY_BROKER_URL": "amqp://guest:guest@rabbit.internal:5672//",
}


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_in_repository([sys.executable, "manage.py", *args], env={"ENV_FILE": "", **env})


def test_check_deploy_reports_nothing_with_production_settings() -> None:
    result = run_manage(
        "check", "--deploy", "--fail-level", "WARNING", env={**PRODUCTION_ENV, "SECRET_KEY": secrets.token_urlsafe(60)}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_it_refuses_to_start_without_a_secret_key_when_debug_is_off() -> None:
    result = run_manage("check", env={**PRODUCTION_ENV, "SECRET_KEY": ""})
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_debug_is_off_unless_set() -> None:
    result = run_manage(
        "shell",
        "-c",
        "from django.conf import settings; print(settings.DEBUG)",
        env={**PRODUCTION_ENV, "SECRET_KEY": secrets.token_urlsafe(60)},
    )
    assert result.stdout.strip().splitlines()[-1] == "False", result.stderr


def test_the_embedded_sqlite_queues_its_writers_and_postgresql_is_left_alone(tmp_path) -> None:
    """Without DATABASE_URL: WAL, IMMEDIATE transactions and a busy timeout (tests/ops/test_sqlite_load.py shows why);
    the options are SQLite's only."""
    show = "from django.db import connection; print(sorted(connection.settings_dict['OPTIONS'].items()))"
    embedded = run_manage("shell", "-c", show, env={"SECRET_KEY": "k", "VAR_DIR": str(tmp_path)})
    production = run_manage("shell", "-c", show, env={**PRODUCTION_ENV, "SECRET_KEY": secrets.token_urlsafe(60)})

    assert embedded.stdout.strip().splitlines()[-1] == str(
        [("init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"), ("timeout", 20),
         ("transaction_mode", "IMMEDIATE")]
    ), embedded.stderr  # fmt: skip
    assert production.stdout.strip().splitlines()[-1] == "[('connect_timeout', 3)]", production.stderr
