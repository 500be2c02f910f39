"""docs/design.md is the project's own design document (issue 27, item 7): its configuration reference names every
key the YAML parser accepts, with the parser's default, so it cannot fall behind the code; and nothing in the
repository points outside it for the design."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest

from apps.engine.registry import ALGORITHM_NAMES
from apps.limits.choices import KEY_BY_FIELDS, PERIOD_SECONDS, Mode, RuleAction, StoreFailurePolicy
from apps.limits.config_io.sections import SECTIONS, Key, Section
from tests.servers import repository_root

ROOT = repository_root()
DESIGN = ROOT / "docs" / "design.md"
# Spelled in pieces so that this file does not name what it looks for.
OUTSIDE_REFERENCES = ("../" + "shared", "shared/" + "seeds", "DESIGN" + ".md")


def section_text(heading: str) -> str:
    """The text under `### heading`, up to the next heading of that level or above."""
    text = DESIGN.read_text()
    found = re.search(rf"^### {re.escape(heading)}\n(.*?)(?=^#{{1,3}} |\Z)", text, re.MULTILINE | re.DOTALL)
    assert found, f"docs/design.md has no section “### {heading}”"
    return found.group(1)


def key_row(section: Section, key: Key) -> list[str]:
    """The cells of the row of `key` in its section's table: key, type, default, meaning."""
    for line in section_text(f"`{section.name}`").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == f"`{key.name}`":
            assert len(cells) == 4, line
            return cells
    raise AssertionError(f"docs/design.md, section `{section.name}`, has no row for the key `{key.name}`")


def written(value: Any) -> str:
    """A default as YAML writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == "":
        return '""'
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


SECTION_KEYS = [
    pytest.param(section, key, id=f"{section.name}.{key.name}") for section in SECTIONS for key in section.keys
]


@pytest.mark.parametrize(("section", "key"), SECTION_KEYS)
def test_every_key_the_parser_accepts_is_in_the_design_doc_with_its_default(section: Section, key: Key) -> None:
    _, kind, default, meaning = key_row(section, key)

    assert meaning, f"{section.name}.{key.name} has no meaning written"
    if key.required:
        assert "required" in kind
        assert default == ""
    else:
        assert "required" not in kind
        assert default.startswith(f"`{written(key.default)}`"), (default, written(key.default))


@pytest.mark.parametrize("section", SECTIONS, ids=lambda section: section.name)
def test_every_section_names_its_identity_keys(section: Section) -> None:
    identity = re.search(r"^Identity: (.*)\.$", section_text(f"`{section.name}`"), re.MULTILINE)

    assert identity, section.name
    assert identity.group(1) == ", ".join(f"`{key}`" for key in section.identity_keys)


def test_the_design_doc_has_no_key_the_parser_does_not_accept() -> None:
    for section in SECTIONS:
        rows = re.findall(r"^\| `([a-z_]+)` \|", section_text(f"`{section.name}`"), re.MULTILINE)
        assert sorted(rows) == sorted(key.name for key in section.keys), section.name


def test_every_value_the_limits_parser_accepts_is_named() -> None:
    limits = next(section for section in SECTIONS if section.name == "limits")
    rows = {key.name: " ".join(key_row(limits, key)) for key in limits.keys}
    algorithms = re.findall(r"^\| `([a-z_]+)` \|", section_text("Algorithms"), re.MULTILINE)

    assert sorted(algorithms) == sorted(ALGORITHM_NAMES)
    for name in (*PERIOD_SECONDS, "month"):
        assert f"`{name}`" in rows["period"]
    for field in KEY_BY_FIELDS:
        assert f"`{field}`" in rows["key_by"]
    for value in Mode.values:
        assert f"`{value}`" in rows["mode"]
    for value in StoreFailurePolicy.values:
        assert f"`{value}`" in rows["on_store_failure"]
    access_rules = next(section for section in SECTIONS if section.name == "access_rules")
    action = " ".join(key_row(access_rules, next(key for key in access_rules.keys if key.name == "action")))
    for value in RuleAction.values:
        assert f"`{value}`" in action


def repository_files() -> list[str]:
    command = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(command, cwd=ROOT, check=True, capture_output=True).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def test_no_file_points_outside_the_repository_for_the_design() -> None:
    offenders = []
    for name in repository_files():
        try:
            text = (ROOT / name).read_text()
        except UnicodeDecodeError:
            continue  # binary
        offenders += [f"{name}: {needle}" for needle in OUTSIDE_REFERENCES if needle in text]

    assert offenders == []


def test_the_search_for_outside_references_can_fail() -> None:
    """The needles are what the old pointers said (a test that never finds anything proves nothing)."""
    old = "The export_limits format (" + "DESIGN" + ".md, “Configuration as code”); see ../" + "shared/" + "seeds/001"

    assert [needle for needle in OUTSIDE_REFERENCES if needle in old] == list(OUTSIDE_REFERENCES)
