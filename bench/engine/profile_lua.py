"""Where check.lua's Redis time goes: the script cut short at marks, and its Redis commands alone.

    REDIS_URL=redis://127.0.0.1:6391/0 .venv/bin/python bench/engine/profile_lua.py [--algorithm fixed_window]
        [--case single|same|spread] [--slices 30] [--calls 200] [--compare /tmp/before-lua] [--full-only]
        [--callgrind <pid>]

Every variant runs the KEYS and ARGV RedisStore sends for the case (3 durable limits of 60 s, see
bench/engine/run.py: one check, 100 on the same keys, or 100 over 100 customers). Variants:
  - "return 1": the cost of any EVALSHA with these arguments;
  - "stop: <mark>": the script returning just before the first line starting with <mark> (cumulative cost of
    what comes before; a cut script writes nothing, so every call sees the same state);
  - "commands only": a script issuing exactly the Redis commands the full script issued (logged once), with
    their arguments as literals, and nothing else;
  - "other ...": the same, of check.lua as assembled from another checkout's apps/engine/lua (--compare; the
    arguments must not have changed between the two);
  - "full": the script as shipped.
Timed (default): slices taken in turn (so a busy machine slows them all alike), reporting the lowest and the
median EVALSHA usec_per_call, and the Redis main thread's CPU (/proc/<pid>/schedstat) per call.
Counted (--callgrind <pid> of a `valgrind --tool=callgrind redis-server ...` started by hand): instructions
per call, which a busy machine does not change (they still move by a few % with Redis's own state: keep
differences under ~5% for repeated runs). Use a Redis nobody else calls EVALSHA on. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import uuid
from pathlib import Path

import redis

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--algorithm", default="fixed_window")
parser.add_argument("--case", default="single", choices=("single", "same", "spread"))
parser.add_argument("--slices", type=int, default=30)
parser.add_argument("--calls", type=int, default=200, help="calls per slice (batches: / 20)")
parser.add_argument("--compare", help="a checkout whose lua/ (same arguments) also runs, as 'other full'")
parser.add_argument("--full-only", action="store_true", help="no cut variants")
parser.add_argument(
    "--callgrind", type=int, help="pid of a redis-server run under valgrind --tool=callgrind: count instructions"
)
parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[2]), help="checkout whose engine runs")
ARGS = parser.parse_args()
sys.path.insert(0, ARGS.tree)
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))

from apps.engine import CheckItem  # noqa: E402
from apps.engine.store.plan import plan_item  # noqa: E402
from apps.engine.store.redis import CHECK_SCRIPT, RedisStore  # noqa: E402
from apps.engine.store.script.args import encode  # noqa: E402
from apps.engine.store.script.assembly import assemble as assembled  # noqa: E402
from bench.engine.callgrind import instructions  # noqa: E402
from bench.engine.run import three_limits  # noqa: E402

MARKS = (
    "local CODES",  # after lib.lua's helpers
    "local IDEMPOTENCY_TTL",  # after the algorithms' define()
    "read_call()",  # after check.lua's constants, the shared state and making the phase functions
    "if C.ids then",  # (the first) after read_call: TIME, the numbers, definitions, items, the MGET
    "evaluate()",  # after request ids and seeds
    "spend()",  # after deciding every item
    "usage(log_decisions())",  # after saving the counters
    "if C.ids then answer()",  # after the log and the usage (tally, HINCRBYs, records, SADD)
)
# (not LOG: lib.lua's decision log is called so, and would be what the script answers)
LOGGING = "local CALLS = {}\nlocal function logged(...) CALLS[#CALLS + 1] = {...} return redis.call(...) end\n"


def assemble(tree: str) -> str:
    """check.lua as redis.py assembles it (store/script/assembly.py), from the lua/ folder of another checkout."""
    folder = Path(tree) / "apps" / "engine" / "lua"
    return assembled(read=lambda name: (folder / name).read_text(encoding="utf-8")).text


def cut(script: str, mark: str) -> str:
    """`script` returning an empty table just before the first line that starts with `mark`."""
    head, found, tail = script.partition("\n" + mark)
    if not found:
        raise SystemExit(f"mark not found: {mark!r}")
    return f"{head}\ndo return {{}} end\n{mark}{tail}"


def logging_script(script: str) -> str:
    """`script` with every redis.call logged, answering the log instead of its rows."""
    body = script.replace("redis.call\n", "logged\n", 1)
    if body == script or not body.rstrip().endswith("return C.out"):
        raise SystemExit("cannot find lib.lua's `call = redis.call` or check.lua's final `return C.out`")
    body = body.rstrip()[: -len("return C.out")] + "return cjson.encode(CALLS)\n"
    return LOGGING + body


def lua_string(value: object) -> str:
    text = str(value)
    return "'" + "".join(ch if ch.isalnum() or ch in ":|{}=-_. ,+()" else f"\\{ord(ch)}" for ch in text) + "'"


def commands_script(log: list[list[object]]) -> str:
    """A script issuing the logged commands with their arguments, nothing else."""
    lines = [f"redis.call({', '.join(lua_string(part) for part in command)})" for command in log]
    return "\n".join([*lines, "return 1"])


def workload(store: RedisStore, algorithm: str, case: str) -> tuple[list[str], list[object], int]:
    """(KEYS, ARGV, decisions per call) of the case."""
    limits = three_limits(algorithm, 60)
    if case == "spread":
        checks = [CheckItem(f"acct-{n}", "PutRecords", resource="shard-1", ip="10.0.0.1") for n in range(100)]
    else:
        check = CheckItem("acct-1", "PutRecords", resource="shard-1", ip="10.0.0.1")
        checks = [check] * (1 if case == "single" else 100)
    plans = [plan_item(store._layout, check, limits, store.now_hint_ms()) for check in checks]
    keys, argv, _ = encode(plans, False, "", store._index_base, store._epoch_key, {}, warm_key=store._warm_key)
    return keys, argv, len(checks)


def count_instructions(client: redis.Redis, shas: dict[str, str], keys: list[str], argv: list[object]) -> None:
    """Instructions per call of each variant (deterministic: a busy machine does not change them)."""
    calls = 200 if ARGS.case == "single" else 10
    results = {}
    for name, sha in shas.items():
        client.evalsha(sha, len(keys), *keys, *argv)
        instructions(ARGS.callgrind)
        for _ in range(calls):
            client.evalsha(sha, len(keys), *keys, *argv)
        results[name] = instructions(ARGS.callgrind) / calls
    base = results["return 1"]
    for name, count in results.items():
        over = (count - base) / 1000
        print(f"{name:>40}: {count / 1000:9.1f} k instructions per call, {over:9.1f} k over 'return 1'")


def cleanup(client: redis.Redis, prefix: str) -> None:
    found = list(client.scan_iter(match=f"{prefix}*", count=1000))
    for start in range(0, len(found), 500):
        client.delete(*found[start : start + 500])


def script_variants(log: str) -> dict[str, str]:
    """The scripts to compare: a trivial one, the check script cut at each mark, its commands alone, the
    other checkout's, and the whole check script."""
    variants = {"return 1": "return 1"}
    if not ARGS.full_only:
        variants |= {f"stop: {mark}": cut(CHECK_SCRIPT, mark) for mark in MARKS}
        variants["commands only"] = commands_script(json.loads(log))
    if ARGS.compare:
        other = assemble(ARGS.compare)
        if not ARGS.full_only:
            variants |= {f"other stop: {mark}": cut(other, mark) for mark in MARKS}
        variants["other full"] = other
    variants["full"] = CHECK_SCRIPT
    return variants


def timed(
    client: redis.Redis, shas: dict[str, str], keys: list[str], argv: list[object], calls: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per variant, EVALSHA usec per call and Redis main-thread CPU per call, one sample per slice."""
    samples: dict[str, list[float]] = {name: [] for name in shas}
    cpu: dict[str, list[float]] = {name: [] for name in shas}
    schedstat = Path(f"/proc/{client.info('server')['process_id']}/schedstat")
    for _ in range(ARGS.slices):
        for name, sha in shas.items():
            before = client.info("commandstats").get("cmdstat_evalsha", {"calls": 0, "usec": 0})
            ran = int(schedstat.read_text().split()[0])
            for _ in range(calls):
                client.evalsha(sha, len(keys), *keys, *argv)
            ran = int(schedstat.read_text().split()[0]) - ran
            after = client.info("commandstats")["cmdstat_evalsha"]
            samples[name].append((after["usec"] - before["usec"]) / (after["calls"] - before["calls"]))
            cpu[name].append(ran / 1000 / calls)
    return samples, cpu


def main() -> int:
    """Print one line per variant."""
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6391/0"))
    prefix = f"bench-profile-{uuid.uuid4().hex[:8]}"
    store = RedisStore(client, prefix)
    keys, argv, decisions = workload(store, ARGS.algorithm, ARGS.case)
    log = client.eval(logging_script(CHECK_SCRIPT), len(keys), *keys, *argv)
    shas = {name: client.script_load(text) for name, text in script_variants(log).items()}
    try:
        if ARGS.callgrind:
            count_instructions(client, shas, keys, argv)
            return 0
        calls = ARGS.calls if ARGS.case == "single" else max(5, ARGS.calls // 20)
        samples, cpu = timed(client, shas, keys, argv, calls)
    finally:
        cleanup(client, prefix)
    print(f"{ARGS.algorithm} {ARGS.case}: {len(json.loads(log))} Redis commands per call, {decisions} decisions")
    print("usec_per_call of EVALSHA (wall time inside Redis), and Redis main-thread CPU per call (schedstat, all of")
    print("the command: reading the request too, so compare with 'return 1')")
    for name, values in samples.items():
        low, middle, ran = min(values), statistics.median(values), statistics.median(cpu[name])
        print(
            f"{name:>40}: usec min {low:7.1f} median {middle:7.1f} | cpu median {ran:7.1f} min {min(cpu[name]):7.1f}"
            f" | per decision: usec min {low / decisions:6.2f} cpu median {ran / decisions:6.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
