"""Before any load: the tools and packages bench/api needs, the servers' environments, the platform's config and key."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench.api.phases import OPERATION
from bench.api.servers import PYTHON, ROOT, manage

REQUIREMENTS = ROOT / "bench" / "requirements.txt"

# Three limits on one operation, all far above what the load reaches, so (almost) everything is admitted. Issue 25's
# shape: a fixed window, a token bucket and a calendar quota; not audited, and the load sends no request ids. The
# minute and the day are durable (every limit of a minute or longer is, in the platform); the per-second bucket is
# not. (Before issue 25 the third was a sliding window per client address: the API entries of bench/RESULTS.md
# written before its section measured that.)
LIMITS_YAML = f"""\
operations: [{{name: {OPERATION}, description: "bench/api: three limits on one operation"}}]
limits:
  - name: bench-customer-per-minute
    operation: {OPERATION}
    algorithm: fixed_window
    limit: 10000000
    period: minute
    key_by: [customer]
  - name: bench-customer-resource-rate
    operation: {OPERATION}
    algorithm: token_bucket
    limit: 100000
    period: second
    key_by: [customer, resource]
  - name: bench-customer-per-day
    operation: {OPERATION}
    algorithm: calendar
    limit: 1000000000
    period: day
    key_by: [customer]
services: [{{name: bench-api, operations: []}}]
"""


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SystemExit("bench/api: wrk is not installed. Install it (Debian/Ubuntu: apt-get install wrk).")
    print("bench/api: wrk not found; running `apt-get install -y wrk`", flush=True)
    if subprocess.call(["apt-get", "install", "-y", "wrk"]) != 0:
        print("bench/api: running `apt-get update`, then `apt-get install -y wrk` again", flush=True)
        subprocess.check_call(["apt-get", "update"])
        subprocess.check_call(["apt-get", "install", "-y", "wrk"])
    return shutil.which("wrk") or "wrk"


def ensure_bench_packages() -> None:
    if subprocess.run([PYTHON, "-c", "import django_ratelimit"], capture_output=True).returncode == 0:
        return
    command = [PYTHON, "-m", "pip", "install", "-r", str(REQUIREMENTS)]
    print(f"bench/api: installing the benchmark's packages: {' '.join(command)}", flush=True)
    subprocess.check_call(command)


def base_env(workdir: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "LANG": "C.UTF-8"}
    # The gunicorn config's own knobs, passed through so a run can vary them for every server alike.
    for name in ("WEB_CONCURRENCY", "WEB_TIMEOUT", "WEB_MAX_REQUESTS", "WEB_WORKER_CLASS", "WEB_THREADS"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def fresh_dir(parent: Path, name: str) -> str:
    path = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=parent))
    return str(path)


def platform_env(workdir: Path, database_url: str, redis_url: str, key_prefix: str) -> dict[str, str]:
    return {
        **base_env(workdir),
        "DJANGO_SETTINGS_MODULE": "quota_platform.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "QUOTA_KEY_PREFIX": key_prefix,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "false",
        "SECURE_HTTPS": "false",
        "ENV_FILE": "",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "VAR_DIR": str(workdir / "var"),
        "PROMETHEUS_MULTIPROC_DIR": fresh_dir(workdir, "prometheus"),
    }


def peer_env(workdir: Path, redis_url: str, key_prefix: str, rate: str) -> dict[str, str]:
    return {
        **base_env(workdir),
        "DJANGO_SETTINGS_MODULE": "bench.api.peer.settings",
        "REDIS_URL": redis_url,
        "PEER_KEY_PREFIX": key_prefix,
        "PEER_RATE": rate,
        "SECRET_KEY": secrets.token_urlsafe(50),
    }


def floor_env(workdir: Path, redis_url: str, key_prefix: str) -> dict[str, str]:
    """The floor app's environment (bench/api/floor_app.py): its Redis and key prefix, and the servers' knobs."""
    return {**base_env(workdir), "FLOOR_REDIS_URL": redis_url, "FLOOR_KEY_PREFIX": key_prefix}


def prepare_platform(
    env: dict[str, str],
    workdir: Path,
    limits_yaml: str = LIMITS_YAML,
    service: str = "bench-api",
    key_name: str = "bench/api",
) -> str:
    """Migrate, import the limits (bench/api's 3 by default), create a service-wide API key; returns the key."""
    Path(env["VAR_DIR"]).mkdir(parents=True, exist_ok=True)
    manage(env, "migrate", "--noinput", "-v", "0")
    limits = workdir / "limits.yaml"
    limits.write_text(limits_yaml)
    manage(env, "import_limits", str(limits))
    output = manage(env, "create_api_key", "--service", service, "--name", key_name)
    lines = [line.strip() for line in output.splitlines()]
    for previous, line in zip(lines, lines[1:], strict=False):
        if previous.startswith("Created API key") and line:
            return line
    raise RuntimeError(f"could not read the API key from create_api_key's output:\n{output}")
