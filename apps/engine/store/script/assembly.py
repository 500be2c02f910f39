"""check.lua (and refund.lua) assembled into one script, with a map from its lines back to their sources.

The script: lib.lua, CODES (the algorithm numbers of the call's definitions), one `define(code)` with a branch per
algorithm running its fragments (on first use), then the body; in every line the names of check_fields.lua_names()
(field offsets, answer codes) are replaced by their values. One define() with a branch per algorithm, rather than
a function per algorithm: every function in the script is a closure created again on every call (~0.1 µs each on
this machine).

Redis names a line of the script as "user_script:<line>" in its errors; `Assembled.located` rewrites those to the
.lua file and its line ("check.lua:141"), and `locate` does so in place on a redis-py error, keeping its class.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources

from redis.exceptions import ResponseError

from apps.engine.registry import ALGORITHM_CODES, ALGORITHMS
from apps.engine.store.script.args import ALGORITHM_NUMBERS
from apps.engine.store.script.check_fields import lua_names

GENERATED = "<generated>"
_SCRIPT_LINE = re.compile(r"@?user_(?:script|function):(\d+)")  # a script's line, or a Redis Function's
NAMES = lua_names()
_NAME = re.compile(r"\b(" + "|".join(sorted(NAMES, key=len, reverse=True)) + r")\b")


@dataclass
class Assembled:
    """A script's lines, and per run of lines the source it came from: (its first line here, source)."""

    lines: list[str] = field(default_factory=list)
    runs: list[tuple[int, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def add(self, source: str, text: str) -> None:
        """Append `text` as lines of `source` (a .lua file's name, or GENERATED with what generated it), each name
        of check_fields.lua_names() replaced by its value (no line moves)."""
        self.runs.append((len(self.lines) + 1, source))
        self.lines.extend(_NAME.sub(lambda match: NAMES[match.group(1)], text).splitlines())

    def where(self, line: int) -> tuple[str, int]:
        """(source, line in it) of line `line` (from 1) of the assembled script."""
        at = bisect.bisect_right([first for first, _ in self.runs], line) - 1
        if at < 0 or line > len(self.lines):
            return "<outside the script>", line
        first, source = self.runs[at]
        return source, line - first + 1

    def located(self, message: str) -> str:
        """`message` with each "user_script:<line>" of Redis replaced by "<file>:<line> (user_script:<line>)"."""

        def name(match: re.Match[str]) -> str:
            source, line = self.where(int(match.group(1)))
            return f"{source}:{line} ({match.group(0)})"

        return _SCRIPT_LINE.sub(name, message)


def lua_file(name: str) -> str:
    """The text of apps/engine/lua/<name>."""
    return (resources.files("apps.engine") / "lua" / name).read_text(encoding="utf-8")


def assemble(body: str = "check.lua", read: Callable[[str], str] = lua_file) -> Assembled:
    """lib.lua, lookback.lua, the generated constants, CODES, define(code) with each algorithm's fragments, then `body`.
    read: a .lua file's text by name (a test may hand in a broken fragment)."""
    script = Assembled()
    script.add("lib.lua", read("lib.lua"))
    script.add("lookback.lua", read("lookback.lua"))
    script.add(f"{GENERATED} check_fields.py", "-- check_fields.lua_names() are replaced by their values below.")
    codes = ", ".join(f"'{ALGORITHM_CODES[name]}'" for name in ALGORITHM_NUMBERS)
    script.add(f"{GENERATED} CODES, define()", f"local CODES = {{{codes}}}\ndefine = function(code)")
    for number, algorithm in enumerate(ALGORITHMS.values()):
        script.add(f"{GENERATED} define()", f"{'if' if number == 0 else 'elseif'} code == '{algorithm.code}' then")
        for fragment in algorithm.fragments:
            script.add(fragment, read(fragment))
    script.add(f"{GENERATED} define()", "end\nend")
    script.add(body, read(body))
    return script


def locate(error: ResponseError, script: Assembled) -> ResponseError:
    """`error`, its message naming the .lua file and line of each script line Redis named (same class, same
    object: callers that tell errors apart by class, e.g. ReadOnlyError, still do)."""
    if error.args and isinstance(error.args[0], str):
        error.args = (script.located(error.args[0]), *error.args[1:])
    return error
