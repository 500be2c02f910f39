"""The last-known-good file: a snapshot as JSON, written atomically after each build, so a worker started while
PostgreSQL is down starts from the configuration it last saw (snapshot_holder.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from apps.apikeys.selectors import KeyConfig
from apps.limits.snapshot import (
    SNAPSHOT_FORMAT,
    CustomerConfig,
    LimitConfig,
    OverrideConfig,
    RuleConfig,
    Snapshot,
    ToggleConfig,
)


def snapshot_to_json(snapshot: Snapshot) -> str:
    data = {**dataclasses.asdict(snapshot), "operations": sorted(snapshot.operations)}
    return json.dumps({"format": SNAPSHOT_FORMAT, "snapshot": data}, sort_keys=True)


def snapshot_from_json(text: str) -> Snapshot:
    document = json.loads(text)
    if document.get("format") != SNAPSHOT_FORMAT:
        raise ValueError(f"unsupported snapshot format {document.get('format')!r}")
    data = document["snapshot"]
    return Snapshot(
        version=data["version"],
        built_at=data["built_at"],
        customers={k: CustomerConfig(**v) for k, v in data["customers"].items()},
        limits_by_operation={k: tuple(_limit_from(v) for v in vs) for k, vs in data["limits_by_operation"].items()},
        # A file written before operations were listed knows at least those with limits.
        operations=frozenset(data.get("operations", data["limits_by_operation"])),
        overrides_by_customer={
            k: tuple(_override_from(v) for v in vs) for k, vs in data["overrides_by_customer"].items()
        },
        rules=tuple(RuleConfig(**v) for v in data["rules"]),
        keys_by_prefix={
            k: KeyConfig(**{**v, "operations": tuple(v["operations"])}) for k, v in data["keys_by_prefix"].items()
        },
        toggles={k: ToggleConfig(**v) for k, v in data["toggles"].items()},
    )


def _limit_from(data: dict[str, Any]) -> LimitConfig:
    return LimitConfig(**{**data, "key_by": tuple(data["key_by"]), "match": tuple(map(tuple, data["match"]))})


def _override_from(data: dict[str, Any]) -> OverrideConfig:
    return OverrideConfig(**{**data, "match": tuple(map(tuple, data["match"]))})


def snapshot_save(snapshot: Snapshot, path: Path) -> None:
    """Write atomically (temp file + rename) so a crash never leaves half a snapshot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".snapshot-")
    with os.fdopen(fd, "w") as handle:
        handle.write(snapshot_to_json(snapshot))
    os.replace(temporary, path)


def snapshot_load(path: Path) -> Snapshot:
    return snapshot_from_json(path.read_text())
