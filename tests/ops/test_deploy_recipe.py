"""The README's deployment recipe, followed to the end (issue 27, item 6).

A copy of the repository (its files as a clone has them) stands for the empty machine's checkout. The README's
`deploy-env` block becomes its `.env`, with this test's own PostgreSQL database, Redis, secret key, host and port in
place of the example values; its `deploy-steps` block runs as written, with bash: check --deploy, migrate,
setup_periodic_tasks, collectstatic, createsuperuser, import_limits, create_api_key and `honcho start` (the
Procfile's web, workers and beat). Then, talking HTTP to gunicorn as the README's nginx would (X-Forwarded-Proto,
X-Forwarded-For), the created admin logs in and a check with the created key is answered 200, while a plain-http
check gets the 301 the README's TLS step explains. Slow: a dozen real processes.
"""

from __future__ import annotations

import contextlib
import http.cookies
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import requests

from tests.servers import RedisServer, free_port, repository_root

pytestmark = pytest.mark.slow

ROOT = repository_root()
README = ROOT / "README.md"
STARTUP_TIMEOUT_S = 180.0
ADMIN_PASSWORD = "recipe-" + secrets.token_urlsafe(12)
# What the test puts in place of the README's example values; every one of these must be in the block.
REPLACED_SETTINGS = ("SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "BIND")
# Added to the README's .env: two web workers are plenty on the shared 2-core test machine.
EXTRA_SETTINGS = {"WEB_CONCURRENCY": "2"}


def readme_block(marker: str) -> str:
    """The fenced block right after the README's `<!-- marker: ... -->` comment."""
    text = README.read_text()
    found = re.search(rf"^<!-- {re.escape(marker)}:[^\n]*-->\n```[a-z]*\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert found, f"README.md has no fenced block after <!-- {marker}: ... -->"
    return found.group(1)


def recipe_env_file(values: dict[str, str]) -> str:
    """The README's .env block with `values` in place of its example values, plus EXTRA_SETTINGS."""
    lines, seen = [], set()
    for line in readme_block("deploy-env").splitlines():
        name = line.split("=", 1)[0].strip()
        if "=" in line and not line.lstrip().startswith("#") and name in values:
            line, _ = f"{name}={values[name]}", seen.add(name)
        lines.append(line)
    assert seen == set(values), f"the README's .env block lacks {sorted(set(values) - seen)}"
    lines += [f"{name}={value}" for name, value in EXTRA_SETTINGS.items()]
    return "\n".join(lines) + "\n"


def checkout_copy(target: Path) -> None:
    """The repository's files as a clone (plus uncommitted work) has them, and the installed .venv."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to((ROOT / ".venv").resolve())


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """A new, empty database on the harness's PostgreSQL (not the test database): the machine's `createdb`."""
    base = urlsplit(os.environ["DATABASE_URL"])
    name = f"recipe_{secrets.token_hex(4)}"
    admin_dsn = urlunsplit(base._replace(path="/postgres"))
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(base._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Deployed:
    url: str
    host: str
    database_url: str
    log: Path
    api_key: str

    def proxied(self, **headers: str) -> dict[str, str]:
        """What the README's nginx adds to every request it passes on."""
        return {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9", **headers}

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def started_pids(output: str) -> list[int]:
    """The Procfile processes honcho started (each the leader of a process group of its own)."""
    return [int(pid) for pid in re.findall(r"\| \S+ started \(pid=(\d+)\)", output)]


def wait_for(what: str, ready, process: subprocess.Popen, log: Path, timeout: float = STARTUP_TIMEOUT_S):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (value := ready()) is not None:
            return value
        if process.poll() is not None:
            pytest.fail(f"the steps stopped (exit {process.returncode}) before {what}:\n{log.read_text()[-6000:]}")
        time.sleep(0.5)
    pytest.fail(f"no {what} within {timeout:.0f} s:\n{log.read_text()[-6000:]}")


def stop(process: subprocess.Popen, log: Path) -> None:
    """SIGTERM to bash and honcho (as Ctrl-C would), which stops each Procfile process; stragglers are killed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)
    pids = started_pids(log.read_text(errors="replace"))
    deadline = time.monotonic() + 30
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if _alive(pid)]
        time.sleep(0.2)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # honcho starts each in a session of its own
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _key_in(output: str) -> str | None:
    found = re.search(r"Created API key \S+ for service mailer[^\n]*:\n\s+(\S+)", output)
    return found.group(1) if found else None


def _healthy(url: str) -> bool | None:
    with contextlib.suppress(requests.RequestException):
        if requests.get(f"{url}/healthz", timeout=2).status_code == 200:
            return True
    return None


@pytest.fixture(scope="module")
def deployed(tmp_path_factory) -> Iterator[Deployed]:
    machine = tmp_path_factory.mktemp("recipe")
    app = machine / "quota-platform"
    app.mkdir()
    checkout_copy(app)
    redis_server = RedisServer().start()
    try:
        with fresh_database() as database_url:
            port = free_port()
            (app / ".env").write_text(
                recipe_env_file({
                    "SECRET_KEY": secrets.token_urlsafe(50),
                    "ALLOWED_HOSTS": "127.0.0.1",
                    "DATABASE_URL": database_url,
                    "REDIS_URL": f"redis://127.0.0.1:{redis_server.port}/0",
                    "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_server.port}/1",
                    "BIND": f"127.0.0.1:{port}",
                })
            )  # fmt: skip
            log = machine / "steps.log"
            # The machine's environment, not the test harness's: the steps must work from .env alone.
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(machine), "LANG": "C.UTF-8"}
            env["DJANGO_SUPERUSER_PASSWORD"] = ADMIN_PASSWORD
            with log.open("wb") as out:
                process = subprocess.Popen(
                    ["bash", "-eu", "-c", readme_block("deploy-steps")],
                    cwd=app, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
            try:
                url = f"http://127.0.0.1:{port}"
                api_key = wait_for("API key", lambda: _key_in(log.read_text(errors="replace")), process, log)
                wait_for("healthy web server", lambda: _healthy(url), process, log)
                yield Deployed(url=url, host=f"127.0.0.1:{port}", database_url=database_url, log=log, api_key=api_key)
            finally:
                stop(process, log)
    finally:
        redis_server.cleanup()


def cookies_of(response: requests.Response) -> dict[str, http.cookies.Morsel]:
    """Every cookie the answer sets, with its attributes (requests would not send a Secure one over http)."""
    jar: http.cookies.SimpleCookie = http.cookies.SimpleCookie()
    for header in response.raw.headers.getlist("Set-Cookie"):
        jar.load(header)
    return dict(jar)


def cookie_header(cookies: dict[str, http.cookies.Morsel]) -> str:
    return "; ".join(f"{name}={morsel.value}" for name, morsel in cookies.items())


def test_the_created_admin_logs_in_over_the_proxy_and_the_collected_static_files_are_served(deployed) -> None:
    login = f"{deployed.url}/admin/login/?next=/admin/"
    page = requests.get(login, headers=deployed.proxied(), allow_redirects=False, timeout=10)
    assert page.status_code == 200, page.text[:500]
    cookies = cookies_of(page)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token
    assert "csrftoken" in cookies

    origin = f"https://{deployed.host}"
    answer = requests.post(
        login,
        data={"username": "admin", "password": ADMIN_PASSWORD, "csrfmiddlewaretoken": token.group(1)},
        headers=deployed.proxied(Cookie=cookie_header(cookies), Origin=origin, Referer=f"{origin}/admin/login/"),
        allow_redirects=False, timeout=10,
    )  # fmt: skip
    assert answer.status_code == 302, answer.text[:2000]
    assert answer.headers["Location"] == "/admin/"
    cookies |= cookies_of(answer)
    assert cookies["sessionid"]["secure"], "SECURE_HTTPS must make the session cookie Secure"

    admin = requests.get(f"{deployed.url}/admin/", headers=deployed.proxied(Cookie=cookie_header(cookies)), timeout=10)
    assert admin.status_code == 200
    assert "Log out" in admin.text
    assert "<strong>admin</strong>" in admin.text
    stylesheet = re.search(r'href="(/static/admin/css/base[^"]*\.css)"', admin.text)
    assert stylesheet, admin.text[:2000]
    css = requests.get(f"{deployed.url}{stylesheet.group(1)}", headers=deployed.proxied(), timeout=10)
    assert css.status_code == 200  # collectstatic ran: WhiteNoise serves STATIC_ROOT
    assert "body" in css.text


def test_a_check_with_the_created_key_is_answered_200_through_the_proxy(deployed) -> None:
    body = {"customer": "first-customer", "operation": "SendEmail"}
    bearer = {"Authorization": f"Bearer {deployed.api_key}"}

    answer = requests.post(f"{deployed.url}/api/v1/check", json=body, headers=deployed.proxied(**bearer), timeout=10)

    assert answer.status_code == 200, answer.text
    decision = answer.json()
    assert decision["allowed"] is True
    assert [limit["name"] for limit in decision["limits"]] == ["send-email-per-minute"]  # the imported limit


def test_a_check_over_plain_http_is_redirected_to_https_as_the_readme_says(deployed) -> None:
    answer = requests.post(
        f"{deployed.url}/api/v1/check",
        json={"customer": "first-customer", "operation": "SendEmail"},
        headers={"Authorization": f"Bearer {deployed.api_key}"},
        allow_redirects=False, timeout=10,
    )  # fmt: skip

    assert answer.status_code == 301
    assert answer.headers["Location"] == f"https://{deployed.host}/api/v1/check"


def test_the_procfile_worker_and_beat_run_the_scheduled_jobs(deployed) -> None:
    def succeeded() -> list[str]:
        with psycopg.connect(deployed.database_url) as conn:
            rows = conn.execute("SELECT name FROM alerts_joboutcome WHERE last_success_at IS NOT NULL").fetchall()
        return [name for (name,) in rows]

    deadline = time.monotonic() + 120
    while not (jobs := succeeded()) and time.monotonic() < deadline:
        time.sleep(1)

    assert jobs, deployed.output()[-6000:]
    output = deployed.output()
    for process in ("web.1", "worker.1", "background.1", "beat.1"):
        assert re.search(rf"\| {re.escape(process)} started \(pid=\d+\)", output), process
