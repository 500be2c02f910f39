"""JSON: one document, the filters first and then every row, written row by row."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import BinaryIO

from apps.reports.exports.columns import USAGE_COLUMNS, Column, usage_row_dict
from apps.usage.models import UsageBucket


def usage_json_chunks(
    rows: Iterable[UsageBucket], info: Mapping[str, object], columns: Sequence[Column] = USAGE_COLUMNS
) -> Iterator[str]:
    """`{**info, "rows": [...]}` as text pieces, one row per line, so the document never sits in memory."""
    head = json.dumps(dict(info), ensure_ascii=False)[:-1]  # without its closing brace: the rows follow
    yield head + (", " if info else "") + '"rows": [\n'
    separator = ""
    for row in rows:
        yield separator + json.dumps(usage_row_dict(row, columns), ensure_ascii=False)
        separator = ",\n"
    yield "\n]}\n"


def usage_json_write(rows: Iterable[UsageBucket], target: BinaryIO, info: Mapping[str, object]) -> None:
    for chunk in usage_json_chunks(rows, info):
        target.write(chunk.encode())
