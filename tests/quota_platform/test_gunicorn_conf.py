"""gunicorn's config reads the same environment as Django's settings, `.env` included (quota_platform/env.py):
gunicorn started on its own (a Procfile line, a systemd unit) listens where `.env` says, as `make run` does."""

import sys

from tests.quota_platform.processes import run_in_repository

SHOW = "import quota_platform.gunicorn_conf as g; print(g.bind, g.workers, g.timeout, g.max_requests, g.loglevel)"


def gunicorn_values(env_file: str, **env: str) -> list[str]:
    result = run_in_repository([sys.executable, "-c", SHOW], env={"ENV_FILE": env_file, **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_gunicorn_reads_bind_workers_and_its_own_settings_from_the_env_file(tmp_path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "BIND=0.0.0.0:9123\nWEB_CONCURRENCY=3\nWEB_TIMEOUT=12\nWEB_MAX_REQUESTS=5000\nLOG_LEVEL=WARNING\n"
    )

    assert gunicorn_values(str(env_file)) == ["0.0.0.0:9123", "3", "12", "5000", "warning"]


def test_the_environment_wins_over_the_env_file_and_port_alone_moves_the_default_bind(tmp_path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("PORT=9200\nWEB_CONCURRENCY=3\n")

    assert gunicorn_values(str(env_file), WEB_CONCURRENCY="5")[:2] == ["127.0.0.1:9200", "5"]
