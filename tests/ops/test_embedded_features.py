"""What `make run` (the embedded default: SQLite, no Redis) says about the features that need Redis, seen as a
newcomer sees it: the dashboard, the quality page, `audit_quality` and the alert job of a real running platform."""

import os
import re
import subprocess
import sys

import pytest
import requests

from tests.ops.test_run_platform import embedded_platform  # noqa: F401 - the fixture: a real `make run`
from tests.servers import repository_root

pytestmark = pytest.mark.slow

NEEDS_REDIS = "(production setup: set REDIS_URL)"


def logged_in(base_url: str, log_text: str) -> requests.Session:
    password = re.search(r"login: admin / (\S+)", log_text).group(1)
    session = requests.Session()
    session.get(f"{base_url}/admin/login/", timeout=10)
    answer = session.post(
        f"{base_url}/admin/login/?next=/admin/",
        data={"username": "admin", "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        timeout=10,
    )
    assert answer.url == f"{base_url}/admin/", answer.text[-2000:]
    return session


def manage(var_dir, *arguments: str) -> subprocess.CompletedProcess[str]:
    """A management command on the running platform's files, as a newcomer types it in another terminal."""
    unset = {"DATABASE_URL", "REDIS_URL", "COUNTERS_REDIS_URL", "CELERY_BROKER_URL"}
    env = {name: value for name, value in os.environ.items() if name not in unset}
    env.update(ENV_FILE="", VAR_DIR=str(var_dir), SECRET_KEY="embedded-features-test-key")
    return subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=repository_root(), env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_each_feature_that_needs_redis_says_so_on_a_running_embedded_platform(embedded_platform) -> None:  # noqa: F811
    base_url, _, tmp_path = embedded_platform
    admin = logged_in(base_url, (tmp_path / "out.log").read_text())

    dashboard = admin.get(f"{base_url}/admin/", timeout=30).text
    assert "Redis: not configured</span> — counters are in-process (embedded default)" in dashboard
    assert "Redis: up" not in dashboard

    quality = admin.get(f"{base_url}/admin/console/quality/", timeout=30).text
    assert f"The decision log needs Redis {NEEDS_REDIS}" in quality
    assert "Every limit held" not in quality

    audit = manage(tmp_path / "var", "audit_quality")
    assert audit.returncode == 2, audit.stderr
    assert f"The decision log needs Redis {NEEDS_REDIS}" in audit.stderr
    assert "violations" not in audit.stdout

    form = {"name": "near-the-limit", "kind": "usage", "enabled": "on", "threshold": 80, "window_minutes": 1,
            "customer": "", "limit": "", "operation": "", "job": "", "emails": "ops@example.com", "webhook_url": "",
            "csrfmiddlewaretoken": admin.cookies["csrftoken"]}  # fmt: skip
    saved = admin.post(f"{base_url}/admin/alerts/alertrule/add/", data=form, timeout=30)
    assert f"Usage-share alerts need Redis {NEEDS_REDIS}" in saved.text

    alerts = manage(tmp_path / "var", "run_job", "evaluate_alerts")
    assert alerts.returncode == 0, alerts.stderr
    assert f"near-the-limit: Usage-share alerts need Redis {NEEDS_REDIS}" in alerts.stdout
