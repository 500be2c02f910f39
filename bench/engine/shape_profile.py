"""Where a shaped 3-limit check's Redis instructions go: its Redis Function cut short at named lines, under callgrind.

    valgrind --tool=callgrind redis-server --port 6493 --save "" --appendonly no   (then CONFIG SET hz 1)
    REDIS_URL=redis://127.0.0.1:6493/0 .venv/bin/python bench/engine/shape_profile.py --callgrind <pid> [--durable]

The check is bench/engine/feature_cases.py's base (fixed window, token bucket, calendar; --durable: the minute and
the day durable, the platform's case, on a warm epoch). Its FCALL arguments are recorded from RedisStore, then each
row loads a copy of the shape's library that returns right after the named line of shape.lua (`return {}`), and
counts the instructions the whole Redis process executes per call (reading and answering included) over --calls
calls across 64 customers. Each row is the cost up to that line; the differences are what each part costs.
Instruction counts do not move with the machine's load. Not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.engine.store.redis import RedisStore  # noqa: E402
from apps.engine.store.script.shapes import shape_library, shape_of  # noqa: E402
from bench.engine.callgrind import instructions  # noqa: E402
from bench.engine.feature_cases import CUSTOMERS, base_limits, empty_seeds, item  # noqa: E402

FAR_DEADLINE_MS = 4_102_444_800_000  # 2100: the prologue reads TIME and lets the call run, as a live call's does
CUTS = [  # (row, the line of shape.lua after which the copy returns; None: the whole call)
    ("FCALL, deadline prologue, fresh_call", "return function(KEYS, ARGV)"),
    ("+ now", "local now = read_now"),
    ("+ the numbers (one struct.unpack)", "local cache, loaded"),
    ("+ the states (one MGET)", "prefetch(KEYS)"),
    ("+ the warm-epoch check", "local out = {}"),
    ("+ deciding (load, eval, apply, report)", "  out[i] = row"),
    ("the whole check (+ 3 SETs and the answer)", None),
]


def recorded_calls(client: redis.Redis, durable: bool) -> tuple[str, list[tuple[int, tuple[Any, ...]]]]:
    """The shape's library text and the FCALL (numkeys, keys and args) of 64 warm checks."""
    store = RedisStore(client, f"bench-shape-{time.time_ns()}", seeder=empty_seeds)
    specs = tuple(base_limits(durable=durable))
    for n in range(2 * CUSTOMERS):
        store.check(item(n), specs)
    client.set(store._layout.warm_key(), client.get(store._layout.epoch_key()) or b"0")
    calls: list[tuple[int, tuple[Any, ...]]] = []
    real = client.fcall
    client.fcall = lambda name, numkeys, *rest: (
        calls.append((numkeys, (*rest[:-1], FAR_DEADLINE_MS)))
        or real(  # type: ignore[method-assign]
            name, numkeys, *rest
        )
    )
    for n in range(CUSTOMERS):
        store.check(item(n), specs)
    client.fcall = real  # type: ignore[method-assign]
    return shape_library(shape_of(specs, True))[1].text, calls


def cut_copy(text: str, row: int, after: str | None) -> tuple[str, str]:
    """(function name, library) of a copy of `text` returning right after the first line starting with `after`."""
    name = text.split("name=", 1)[1].split("\n", 1)[0]
    lines, copy = [], f"{name}_cut{row}"
    for line in text.replace(name, copy).split("\n"):
        lines.append(line)
        if after is not None and line.startswith(after):
            lines.append("do return {} end")
            after = None
    return copy, "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callgrind", type=int, required=True, help="pid of the callgrind-run redis-server")
    parser.add_argument("--durable", action="store_true")
    parser.add_argument("--calls", type=int, default=640)
    args = parser.parse_args()
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6493/0"), socket_timeout=5)
    text, calls = recorded_calls(client, args.durable)
    print(f"3-limit check, durable={args.durable}: k instructions per FCALL, up to each part")
    for row, (label, after) in enumerate(CUTS):
        name, library = cut_copy(text, row, after)
        client.function_load(library, replace=True)
        for numkeys, rest in calls[:3]:
            client.fcall(name, numkeys, *rest)
        instructions(args.callgrind)
        for n in range(args.calls):
            numkeys, rest = calls[n % len(calls)]
            client.fcall(name, numkeys, *rest)
        print(f"  {label:<45} {instructions(args.callgrind) / args.calls / 1000:7.1f}")
        client.function_delete(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
