"""Reading a check script's answer (check.lua, shape.lua): a code instead of a decision, or rows then the now."""

from __future__ import annotations

from typing import Any


def answer_code(answer: list[Any]) -> int | None:
    """The first number of a script's first row: NEEDS_SEED, REUSED or HANDOVER when it answered that instead of
    deciding (else an item's allowed 0|1, or REPLAYED); None when it has no row (an empty batch answers its now)."""
    first = answer[0] if answer else None
    return int(first[0]) if isinstance(first, list) and first else None


def answer_now(answer: list[Any]) -> tuple[list[list[Any]], int]:
    """(the rows, the script's now) of check.lua's answer to a call that decided (its now comes last)."""
    return answer[:-1], int(answer[-1])
