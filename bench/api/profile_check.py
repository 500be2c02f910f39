"""Profile the check endpoint in one process: the WSGI app called directly, as gunicorn's sync worker calls it.

    .venv/bin/python tests/testenv.py .venv/bin/python bench/api/profile_check.py [--requests 5000] [--batch 0]
        [--top 25] [--sort tottime] [--no-profile]

Migrates a fresh database (testenv's throwaway PostgreSQL), imports bench/api's 3 limits, creates an API key,
then sends --requests POSTs to /api/v1/check (or, with --batch N, /api/v1/check/batch with N items) and prints
the CPU µs per request (process time, without the profiler) and, unless --no-profile, cProfile's top entries.
No HTTP parsing and no socket: what is left is what the app costs, the part this project can change.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.api.phases import OPERATION  # noqa: E402
from bench.api.prepare import LIMITS_YAML  # noqa: E402


def _environ(path: str, body: bytes, token: str) -> dict[str, Any]:
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }


def _check(rng: random.Random) -> str:
    ip = rng.randrange(512)
    net = "192.0.2" if ip < 256 else "198.51.100"
    return (
        f'{{"customer":"cust-{rng.randint(1, 1000)}","operation":"{OPERATION}",'
        f'"resource":"res-{rng.randint(1, 20)}","ip":"{net}.{ip % 256}"}}'
    )


def _bodies(batch: int, count: int = 512) -> list[bytes]:
    rng = random.Random(7)
    if not batch:
        return [_check(rng).encode() for _ in range(count)]
    return [
        ('{"mode":"independent","items":[' + ",".join(_check(rng) for _ in range(batch)) + "]}").encode()
        for _ in range(count)
    ]


def _setup(workdir: Path) -> str:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="quota_platform.settings",
        DEBUG="false",
        SECURE_HTTPS="false",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        VAR_DIR=str(workdir / "var"),
        QUOTA_KEY_PREFIX=f"qpprof{secrets.token_hex(3)}",
        ENV_FILE="",
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", "--noinput", verbosity=0)
    limits = workdir / "limits.yaml"
    limits.write_text(LIMITS_YAML)
    call_command("import_limits", str(limits), stdout=io.StringIO())
    out = io.StringIO()
    call_command("create_api_key", "--service", "bench-api", "--name", "profile", stdout=out)
    lines = [line.strip() for line in out.getvalue().splitlines()]
    return next(line for prev, line in zip(lines, lines[1:], strict=False) if prev.startswith("Created API key"))


def _drive(app: Any, path: str, bodies: list[bytes], token: str, count: int) -> None:
    statuses: dict[str, int] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        statuses[status] = statuses.get(status, 0) + 1

    for index in range(count):
        response = app(_environ(path, bodies[index % len(bodies)], token), start_response)
        b"".join(response)
        close = getattr(response, "close", None)  # PEP 3333: the lean door answers a plain list
        if close is not None:
            close()
    if set(statuses) - {"200 OK"}:
        print(f"statuses: {statuses}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--dump", help="also write the profile to this file (pstats)")
    parser.add_argument(
        "--middleware", help="what-if: 'full' (the settings' MIDDLEWARE) or a comma-separated list (default: wsgi.py's)"
    )
    args = parser.parse_args()
    token = _setup(Path(tempfile.mkdtemp(prefix="qp-profile-")))
    app = _application(args.middleware)
    path = "/api/v1/check/batch" if args.batch else "/api/v1/check"
    bodies = _bodies(args.batch)
    _drive(app, path, bodies, token, 500)  # warm: snapshot, scripts, names, caches
    started = time.process_time()
    _drive(app, path, bodies, token, args.requests)
    spent = time.process_time() - started
    print(f"{path}: {spent * 1e6 / args.requests:.0f} µs CPU per request over {args.requests} (no profiler)")
    if args.no_profile:
        return
    profiler = cProfile.Profile(time.process_time)  # CPU, not wall time: Redis waits are not ours
    profiler.runcall(_drive, app, path, bodies, token, args.requests)
    stats = pstats.Stats(profiler)
    if args.dump:
        stats.dump_stats(args.dump)
    stats.sort_stats(args.sort).print_stats(args.top)
    _print_by_package(stats)


def _application(middleware: str | None) -> Any:
    """The production WSGI entry (/api/v1/ through its lean middleware chain), or, as a what-if, the whole app
    under another MIDDLEWARE list ("full" = the settings' own list, what the admin pages get)."""
    from django.conf import settings
    from django.core.wsgi import get_wsgi_application

    if middleware is None:
        from quota_platform.wsgi import application

        return application
    if middleware != "full":
        settings.MIDDLEWARE = [name for name in middleware.split(",") if name]
    return get_wsgi_application()


def _package(filename: str) -> str:
    """Where a function lives, coarsely: the site-package or the project module (apps.x.y), else the file."""
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1].split("/", 1)[0]
    if str(ROOT) in filename:
        return filename.replace(str(ROOT) + "/", "").removesuffix(".py").replace("/", ".")
    return "python" if filename.startswith(("~", "<")) or "/lib/python" in filename else filename


def _print_by_package(stats: pstats.Stats) -> None:
    """Own time (tottime) added up by package or project module: where the CPU goes, without the call tree."""
    totals: dict[str, float] = {}
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        totals[_package(filename)] = totals.get(_package(filename), 0.0) + tottime
    whole = sum(totals.values()) or 1.0
    print("own time by package or module:")
    for name, spent in sorted(totals.items(), key=lambda kv: -kv[1])[:30]:
        print(f"  {spent / whole:6.1%}  {name}")


if __name__ == "__main__":
    main()
