"""`manage.py decode_check [FILE]`: print a recorded check.lua call's arguments by name.

FILE (default: standard input) holds recorded calls, one a line: lines of `redis-cli MONITOR` output, lines as typed
into redis-cli (`EVALSHA <sha> <numkeys> <keys...> <args...>`), or JSON arrays of those words; or one JSON object
{"keys": [...], "argv": [...]} as a test holds a call (args.encode's KEYS and ARGV). Lines that are not an
EVAL/EVALSHA are skipped (a MONITOR capture holds every other command too). The reading is
apps/engine/store/script/recorded_call.py; the fields are named in apps/engine/store/script/check_fields.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.engine.store.script.recorded_call import command_of, describe, keys_and_argv, read_call


class Command(BaseCommand):
    help = "Print each argument of recorded check.lua calls (MONITOR lines, redis-cli lines or JSON) by name."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", help="The recorded calls (default: standard input).")

    def handle(self, *args: Any, file: str | None, **options: Any) -> None:
        text = Path(file).read_text(encoding="utf-8") if file else sys.stdin.read()
        calls = recorded_calls(text)
        if not calls:
            raise CommandError("no EVAL or EVALSHA of check.lua found")
        for number, (keys, argv) in enumerate(calls, 1):
            try:
                lines = describe(read_call(keys, argv))
            except (ValueError, IndexError) as error:
                raise CommandError(f"call {number} is not a check.lua call: {error}") from error
            self.stdout.write(f"call {number}:")
            self.stdout.write("\n".join(lines))


def recorded_calls(text: str) -> list[tuple[list[str], list[Any]]]:
    """(KEYS, ARGV) of every EVAL/EVALSHA in `text` (see the module docstring)."""
    if text.lstrip().startswith("{"):
        recorded = json.loads(text)
        return [(list(recorded["keys"]), list(recorded["argv"]))]
    calls = []
    for line in text.splitlines():
        if not line.strip():
            continue
        command = command_of(line)
        if len(command) > 3 and command[0].upper() in (b"EVAL", b"EVALSHA"):
            calls.append(keys_and_argv(command))
    return calls
