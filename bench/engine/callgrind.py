"""Counting a Redis server's instructions under valgrind's callgrind (profile_lua.py, number_form.py):

valgrind --tool=callgrind redis-server --port 6392 --save "" --appendonly no
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def instructions(pid: int) -> int:
    """Instructions the callgrind-run Redis executed since the last dump (dumps and zeroes its counters)."""
    folder = Path(f"/proc/{pid}/cwd").resolve()
    before = set(folder.glob("*.out.*"))
    subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True)
    (dump,) = set(folder.glob("*.out.*")) - before
    for line in dump.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            dump.unlink()
            return int(line.split()[1])
    raise SystemExit(f"no totals in {dump}")
