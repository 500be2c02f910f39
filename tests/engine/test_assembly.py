"""check.lua assembled (store/script/assembly.py): the offsets it reads by come from check_fields.py, and a Redis error
in the assembled script names the .lua file and line it came from."""

from __future__ import annotations

import re

import pytest
import redis
from redis.exceptions import ResponseError

from apps.engine import CheckItem, KeyLayout, LimitSpec, ManualClock
from apps.engine.deadline import with_deadline
from apps.engine.store.plan import plan_item
from apps.engine.store.redis import CHECK, RedisStore
from apps.engine.store.script.args import encode
from apps.engine.store.script.assembly import GENERATED, NAMES, assemble, locate, lua_file
from apps.engine.store.script.check_fields import Definition, Item, LogEntry

NOW = 1_705_320_000_000
MINUTE = LimitSpec("per-minute", "fixed_window", 10, period_s=60, key_by=("customer",))


def test_each_line_maps_back_to_its_file_and_line() -> None:
    script = assemble()
    lines = script.text.splitlines()
    check = lua_file("check.lua").splitlines()

    assert script.where(1) == ("lib.lua", 1)
    assert script.where(len(lines)) == ("check.lua", len(check))
    for number, line in enumerate(lines, 1):
        source, at = script.where(number)
        if not source.startswith(GENERATED):
            original = lua_file(source).splitlines()[at - 1]
            assert line == re.sub(r"\b[A-Z][A-Z_]+\b", lambda name: NAMES.get(name[0], name[0]), original)
    assert script.where(len(lines) + 1)[0] == "<outside the script>"


def test_the_script_reads_the_offsets_python_writes(redis_client: redis.Redis) -> None:
    source = lua_file("check.lua")
    script = assemble().text
    used = set(re.findall(r"\b(?:HEAD|DEF|ITEM|UNIT|LIMIT|ENTRY|TAIL|LABEL)_[A-Z_]+\b", source))

    assert used <= set(NAMES)  # a name check.lua reads by and check_fields.py does not define fails here
    assert not {name for name in NAMES if re.search(rf"\b{name}\b", script)}  # every one replaced
    assert "if N[p + ITEM_DRY_RUN] == 0 then live = true end" in source
    assert f"if N[p + {Item._fields.index('dry_run')}] == 0 then live = true end" in script
    assert f"p = p + {len(Definition._fields)}\n" in script  # p = p + DEF_SIZE
    assert redis_client.eval(f"return {NAMES['ENTRY_AUDIT']}", 0) == LogEntry._fields.index("audit")


def test_an_error_in_a_broken_fragment_names_the_fragment_and_its_line(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    def read(name: str) -> str:
        text = lua_file(name)
        if name != "fixed_window.lua":
            return text
        lines = text.splitlines()
        eval_line = next(n for n, line in enumerate(lines) if "st.used + cost <= lim.q" in line)
        lines[eval_line] = lines[eval_line].replace("<= lim.q", "<= lim.q + lim.missing")  # nil arithmetic
        return "\n".join(lines)

    broken = assemble(read=read)
    plan = plan_item(KeyLayout(key_prefix), CheckItem("acct-1", "Op"), [MINUTE], NOW)
    keys, argv, _ = encode([plan], False, NOW, f"{key_prefix}:ui:")
    with pytest.raises(ResponseError) as raised:
        redis_client.eval(broken.text, len(keys), *keys, *argv)
    error = locate(raised.value, broken)

    line = next(n for n, text in enumerate(read("fixed_window.lua").splitlines(), 1) if "lim.missing" in text)
    assert f"fixed_window.lua:{line} (user_script:" in str(error)
    assert "arithmetic" in str(error)


def test_the_store_raises_script_errors_naming_check_lua(redis_client: redis.Redis, key_prefix: str) -> None:
    store = RedisStore(redis_client, key_prefix, clock=ManualClock(NOW))
    malformed = ["", "i", f"{key_prefix}:ui:", "[1, 0, 99]"]  # a definition cut short after its algorithm number

    with pytest.raises(ResponseError) as raised:
        store._eval(redis_client, [f"{key_prefix}:k"], malformed)

    check = lua_file("check.lua").splitlines()
    line = next(
        n
        for n, text in enumerate(check, 1)
        if text.strip() == "if bounds > 0 then  -- a calendar's window bounds follow: the window holding now"
    )
    assert f"check.lua:{line} (user_script:" in str(raised.value)
    assert type(raised.value) is ResponseError  # the class redis-py gave it, for callers that tell errors apart


def test_the_deadline_prologue_moves_no_line() -> None:
    assert with_deadline(CHECK.text).count("\n") == CHECK.text.count("\n")
