"""`make run`: prepare the embedded default and serve the API, admin, workers (one per queue) and beat until Ctrl-C."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from apps.limits.config_io import DEMO_SERVICE, demo_load
from apps.ops.demo_key import demo_key_ensure, demo_key_path

ADMIN_USERNAME = "admin"
POLL_INTERVAL_S = 0.5


def worker_commands(python: str) -> list[list[str]]:
    """Two Celery workers: the default queue's (accounting, with beat inside: -B, fine for one machine, never for
    several), and one for every other queue (alert deliveries, exports), so accounting never waits behind them."""
    default = settings.CELERY_TASK_DEFAULT_QUEUE
    others = ",".join(queue for queue in settings.CELERY_TASK_QUEUES if queue != default)
    commands = []
    for queues, name in ((default, default), (others, "background")):
        beat = ["-B"] if queues == default else []
        command = [python, "-m", "celery", "-A", "quota_platform", "worker", *beat, f"--queues={queues}"]
        commands.append([*command, f"--hostname={name}@%h", "--loglevel=INFO"])
    return commands


class Command(BaseCommand):
    help = "Migrate, load demo data, and serve the API + admin (gunicorn) with Celery workers and beat."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="Serve HTTP only, without Celery workers/beat.")

    def handle(self, *args: Any, port: int, no_worker: bool, **options: Any) -> None:
        demo_key = self._prepare()
        password = self._admin_password()
        processes = self._start(port, with_worker=not no_worker)
        self.stdout.write(self.style.SUCCESS("\nQuota Platform is running."))
        self.stdout.write(f"  Admin:  http://127.0.0.1:{port}/admin/   login: {ADMIN_USERNAME} / {password}")
        self.stdout.write(f"  API:    http://127.0.0.1:{port}/api/docs/   health: http://127.0.0.1:{port}/healthz")
        self.stdout.write(
            f"  Demo API key ({DEMO_SERVICE}): {demo_key}   (kept in {demo_key_path(Path(settings.VAR_DIR))})"
        )
        self.stdout.write("  Stop with Ctrl-C.\n")
        self.stdout.flush()
        self._supervise(processes)

    def _prepare(self) -> str:
        """Migrate, collect static files, load the demo data and schedule the jobs; returns the demo key."""
        Path(settings.VAR_DIR).mkdir(parents=True, exist_ok=True)
        for option in getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}).values():
            Path(option).mkdir(parents=True, exist_ok=True)
        self.stdout.write("Preparing the database …")
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Collecting static files …")
        call_command("collectstatic", interactive=False, verbosity=0)
        self.stdout.write("Loading the demo data …")
        loaded = demo_load()
        self.stdout.write("Demo data: " + "\n".join(loaded.report.lines()))
        self.stdout.write("Scheduling the beat jobs (flush, rollup, purge, toggle refresh) …")
        call_command("setup_periodic_tasks", stdout=self.stdout)
        return demo_key_ensure(var_dir=Path(settings.VAR_DIR), issued=loaded.issued_key)

    def _admin_password(self) -> str:
        """One admin per installation; its password is kept (mode 600) so every `make run` prints the same."""
        password_file = Path(settings.VAR_DIR) / "admin-password"
        if not password_file.exists():
            password_file.write_text(secrets.token_urlsafe(12))
            password_file.chmod(0o600)
        password = password_file.read_text().strip()
        user, _ = get_user_model().objects.get_or_create(
            username=ADMIN_USERNAME, defaults={"is_staff": True, "is_superuser": True}
        )
        if not user.check_password(password):
            user.set_password(password)
            user.save()
        return password

    def _start(self, port: int, *, with_worker: bool) -> list[subprocess.Popen[bytes]]:
        python = sys.executable
        gunicorn = [
            python,
            "-m",
            "gunicorn",
            "-c",
            "python:quota_platform.gunicorn_conf",
            "--bind",
            f"127.0.0.1:{port}",
        ]
        if not settings.REDIS_URL:
            # In-process counters only add up inside one process.
            gunicorn += ["--workers", "1"]
        commands = [gunicorn + ["quota_platform.wsgi"]]
        if with_worker:
            commands += worker_commands(python)
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": self._fresh_metrics_dir()}
        return [subprocess.Popen(command, cwd=settings.BASE_DIR, env=env) for command in commands]  # noqa: S603

    def _fresh_metrics_dir(self) -> str:
        """gunicorn's workers share their Prometheus samples through files in an empty folder."""
        folder = Path(settings.VAR_DIR) / "prometheus"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return str(folder)

    def _supervise(self, processes: list[subprocess.Popen[bytes]]) -> None:
        stopping = False

        def stop(signum: int, frame: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping and all(process.poll() is None for process in processes):
            time.sleep(POLL_INTERVAL_S)
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            process.wait(timeout=30)
        if not stopping:
            self.stderr.write("A server process stopped on its own; see its output above. Everything was shut down.")
            sys.exit(1)
