"""What check.lua's numbers cost as packed doubles against typed text, in one Redis, alternated.

    .venv/bin/python tests/testenv.py .venv/bin/python bench/engine/number_form.py [--algorithm fixed_window]
        [--slices 30] [--calls 200] [--callgrind <pid>] [--before <tree>]

For each case (one check of 3 durable limits, 100 checks on the same keys, 100 checks over 100 customers: the
KEYS and ARGV RedisStore sends, see bench/engine/run.py), the same numbers travel in ARGV[4] in three forms, each
read by check.lua with only its reading line changed:
  - "json": the shipped form, a JSON array ("[2, 1, ...]", Python's repr of the list), one cjson.decode;
  - "binary": little-endian doubles, struct.unpack (4000 at a time), the form before 2026-11-29;
  - "gmatch": space-separated integers, string.gmatch and tonumber per number.
--before <tree>: also the check.lua of another checkout (e.g. `git archive <commit> apps/engine/lua | tar -x -C
<tree>`), which read packed doubles, with packed doubles: "before" against "binary" is what the rest of the change
(named offsets, phases as functions) costs.
Timed: slices of each form in turn (a busy machine slows them alike): EVALSHA usec per call, lowest and
median. Counted (--callgrind <pid> of a `valgrind --tool=callgrind redis-server ...`): instructions per call.
Also the Python CPU of producing ARGV[4] in each form. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
import time
import timeit
import uuid
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.engine import CheckItem  # noqa: E402
from apps.engine.registry import (
    ALGORITHM_CODES,  # noqa: E402
    ALGORITHMS,  # noqa: E402
)
from apps.engine.store.plan import plan_item  # noqa: E402
from apps.engine.store.redis import CHECK_SCRIPT, RedisStore  # noqa: E402
from apps.engine.store.script.args import ALGORITHM_NUMBERS, encode  # noqa: E402
from bench.engine.callgrind import instructions  # noqa: E402
from bench.engine.run import three_limits  # noqa: E402

# check.lua's reading of ARGV[4] as shipped, and its replacements (one line each: no line of the script moves).
JSON = "cjson.decode(ARGV[4])"
# (an expression: a function made and called in place, which costs a closure more than the reading itself)
BINARY = (
    "(function() local blob, N = ARGV[4], nil local count = #blob / 8 if count <= 4000 then"
    " N = {struct.unpack('<' .. string.rep('d', count), blob)} N[count + 1] = nil else N = {} local done, pos = 0, 1"
    " while done < count do local take = math.min(4000, count - done)"
    " local got = {struct.unpack('<' .. string.rep('d', take), blob, pos)}"
    " for i = 1, take do N[done + i] = got[i] end done, pos = done + take, got[take + 1] end end return N end)()"
)
GMATCH = (
    "(function() local N = {} for n in string.gmatch(ARGV[4], '%d+') do N[#N + 1] = tonumber(n) end return N end)()"
)


def variants(script: str, before: str | None) -> dict[str, str]:
    """The check script with each way of reading ARGV[4] (and the other checkout's, read as it was)."""
    if JSON not in script:
        raise SystemExit("cannot find how check.lua reads ARGV[4]")
    found = {"json": script, "binary": script.replace(JSON, BINARY), "gmatch": script.replace(JSON, GMATCH)}
    if before:
        found["before"] = assemble_tree(before)
    return found


def assemble_tree(tree: str) -> str:
    """check.lua as redis.py assembled it before check_fields.py (lib.lua, CODES, define(), check.lua: no names put
    in place), from another checkout's apps/engine/lua."""
    folder = Path(tree) / "apps" / "engine" / "lua"

    def lua(*names: str) -> str:
        return "\n".join((folder / name).read_text(encoding="utf-8") for name in names)

    codes = ", ".join(f"'{ALGORITHM_CODES[name]}'" for name in ALGORITHM_NUMBERS)
    branches = "\nelse".join(f"if code == '{a.code}' then\n{lua(*a.fragments)}\n" for a in ALGORITHMS.values())
    define = f"define = function(code)\n{branches}\nend\nend"
    return "\n".join([lua("lib.lua"), f"local CODES = {{{codes}}}", define, lua("check.lua")])


def numbers_of(argv: list[object]) -> list[int]:
    return [int(n) for n in json.loads(str(argv[3]))]


def forms(numbers: list[int]) -> dict[str, object]:
    binary = struct.pack(f"<{len(numbers)}d", *numbers)
    return {"json": repr(numbers), "binary": binary, "gmatch": " ".join(map(str, numbers)), "before": binary}


def workload(store: RedisStore, algorithm: str, case: str) -> tuple[list[str], list[object], int]:
    limits = three_limits(algorithm, 60)
    if case == "spread":
        checks = [CheckItem(f"acct-{n}", "PutRecords", resource="shard-1", ip="10.0.0.1") for n in range(100)]
    else:
        check = CheckItem("acct-1", "PutRecords", resource="shard-1", ip="10.0.0.1")
        checks = [check] * (1 if case == "single" else 100)
    plans = [plan_item(store._layout, check, limits, store.now_hint_ms()) for check in checks]
    keys, argv, _ = encode(plans, False, "", store._index_base, store._epoch_key, {}, store._log, store._warm_key)
    return keys, argv, len(checks)


def run_case(client: redis.Redis, store: RedisStore, args: argparse.Namespace, case: str) -> None:
    keys, argv, decisions = workload(store, args.algorithm, case)
    numbers = numbers_of(argv)
    scripts = variants(CHECK_SCRIPT, args.before)
    shas = {name: client.script_load(text) for name, text in scripts.items()}
    sent = {name: [*argv[:3], form, *argv[4:]] for name, form in forms(numbers).items() if name in shas}
    calls = args.calls if case == "single" else max(5, args.calls // 20)
    for name, sha in shas.items():  # every form answers the same (the first call of each writes state)
        client.evalsha(sha, len(keys), *keys, *sent[name])
    print(f"{args.algorithm} {case}: {len(numbers)} numbers, {decisions} decisions per call")
    if args.callgrind:
        for name, sha in shas.items():
            instructions(args.callgrind)
            for _ in range(calls):
                client.evalsha(sha, len(keys), *keys, *sent[name])
            print(f"{name:>8}: {instructions(args.callgrind) / calls / 1000:9.1f} k instructions per call")
        return
    samples: dict[str, list[float]] = {name: [] for name in shas}
    for _ in range(args.slices):
        for name, sha in shas.items():
            before = client.info("commandstats")["cmdstat_evalsha"]
            for _ in range(calls):
                client.evalsha(sha, len(keys), *keys, *sent[name])
            after = client.info("commandstats")["cmdstat_evalsha"]
            samples[name].append((after["usec"] - before["usec"]) / (after["calls"] - before["calls"]))
    for name, values in samples.items():
        low, middle = min(values), statistics.median(values)
        python = timeit.timeit(lambda n=name: forms_one(n, numbers), number=2000, timer=time.process_time) / 2000
        print(
            f"{name:>12}: Redis usec min {low:7.1f} median {middle:7.1f} (per decision {middle / decisions:6.2f})"
            f" | Python to make ARGV[4] {python * 1e6:6.2f} µs"
        )


def forms_one(name: str, numbers: list[int]) -> object:
    if name in ("binary", "before"):
        return struct.pack(f"<{len(numbers)}d", *numbers)
    return repr(numbers) if name == "json" else " ".join(map(str, numbers))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", default="fixed_window")
    parser.add_argument("--cases", default="single,same,spread")
    parser.add_argument("--slices", type=int, default=30)
    parser.add_argument("--calls", type=int, default=200, help="calls per slice (batches: / 20)")
    parser.add_argument("--callgrind", type=int, help="pid of a callgrind-run redis-server: count instructions")
    parser.add_argument("--before", help="a checkout whose apps/engine/lua/check.lua (packed doubles) runs too")
    args = parser.parse_args()
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    prefix = f"bench-form-{uuid.uuid4().hex[:8]}"
    store = RedisStore(client, prefix)
    try:
        for case in args.cases.split(","):
            run_case(client, store, args, case)
    finally:
        found = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for start in range(0, len(found), 500):
            client.delete(*found[start : start + 500])
    return 0


if __name__ == "__main__":
    sys.exit(main())
