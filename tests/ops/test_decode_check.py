"""`manage.py decode_check`: a recorded check.lua call printed by name, from a test's JSON, a MONITOR line or a
line typed for redis-cli (the reading itself: tests/engine/test_recorded_call.py)."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.engine import CheckItem, KeyLayout, LimitSpec
from apps.engine.store.plan import plan_item
from apps.engine.store.script.args import encode

NOW = 1_705_320_000_000
MINUTE = LimitSpec("per-minute", "fixed_window", 10, period_s=60, key_by=("customer",))
HOURLY = LimitSpec("hourly", "sliding_window", 100, period_s=3600, key_by=("customer",))


def recorded() -> tuple[list[str], list[str]]:
    plans = [plan_item(KeyLayout("t"), CheckItem("acct-1", "Put", costs={"bytes": 4}), [MINUTE, HOURLY], NOW)]
    keys, argv, _ = encode(plans, False, NOW, "t:ui:")
    return keys, [str(value) for value in argv]


def decoded(tmp_path: Path, text: str) -> str:
    recording = tmp_path / "call.txt"
    recording.write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command("decode_check", str(recording), stdout=out)
    return out.getvalue()


def test_a_call_held_by_a_test_prints_by_name(tmp_path: Path) -> None:
    keys, argv = recorded()
    text = decoded(tmp_path, json.dumps({"keys": keys, "argv": argv}))

    assert "definition 2: sliding_window t:c:{c=acct-1}:swc:hourly:c=acct-1" in text
    assert "quantity=100 period_ms=3600000 capacity=100 shadow=0" in text
    assert "units: bytes x 4, requests x 1" in text
    assert "limits: definition 1 x 1, definition 2 x 1" in text


def test_monitor_and_redis_cli_lines_print_the_same(tmp_path: Path) -> None:
    keys, argv = recorded()
    words = ["EVALSHA", "0" * 40, str(len(keys)), *keys, *argv, "1705320000500"]
    monitor = "1705320000.123456 [0 127.0.0.1:50000] " + " ".join(json.dumps(word) for word in words)
    typed = " ".join(shlex.quote(word) for word in words)
    noise = '1705320000.1 [0 127.0.0.1:50000] "PING"\n'

    from_monitor = decoded(tmp_path, noise + monitor + "\n")
    assert from_monitor == decoded(tmp_path, typed)
    assert "after the strings: ['1705320000500']" in from_monitor  # the deadline a store appends


def test_a_file_without_a_check_call_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no EVAL or EVALSHA"):
        decoded(tmp_path, '1705320000.1 [0 127.0.0.1:50000] "PING"\n')
