"""Run a command (the test suite) with PostgreSQL and Redis available.

    python tests/testenv.py pytest [ARGS...]

DATABASE_URL and REDIS_URL from the environment are used when set; otherwise a throwaway
server is started from the local binaries for the run and removed afterwards.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.servers import MissingBinary, PostgresServer, RedisServer, missing_binary_message  # noqa: E402

PYTEST_NO_TESTS_COLLECTED = 5


def main(command: list[str]) -> int:
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    env = dict(os.environ)
    started: list[PostgresServer | RedisServer] = []
    try:
        if not env.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
            started.append(PostgresServer().start())
            env["DATABASE_URL"] = started[-1].url
            print(f"testenv: started a throwaway PostgreSQL on port {started[-1].port}", flush=True)
        if not env.get("REDIS_URL"):
            started.append(RedisServer().start())
            env["REDIS_URL"] = started[-1].url
            print(f"testenv: started a throwaway Redis on port {started[-1].port}", flush=True)
        env.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
        # A developer's .env (written by `make run`) must not leak into the tests.
        env.setdefault("ENV_FILE", "")
        code = subprocess.call(command, env=env)  # noqa: S603
    except MissingBinary as error:
        print(missing_binary_message(str(error)), file=sys.stderr)
        return 2
    finally:
        for server in reversed(started):
            server.cleanup()
    if code == PYTEST_NO_TESTS_COLLECTED:
        print("testenv: no tests were collected; that is a failure, not a pass.", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
