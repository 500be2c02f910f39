"""Configuration documents built to exhaust memory or time (issue 23, finding 4): a billion-laughs YAML
document, thousands of aliases, nesting thousands of levels deep, hundreds of thousands of values, a number
of thousands of digits, a megabyte-long value in an invalid field. Every door that reads such a document
refuses it before building it: the admin's YAML import page, `import_limits` and the toggles refresh from
its external source (a file and a URL). The refusal is quick, says why in words and where, its message is
short whatever the document holds, and nothing is written.
"""

from __future__ import annotations

import io
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from apps.limits.config_io.yaml_io import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_NODES
from apps.toggles.models import FeatureToggle, ToggleSource
from apps.toggles.services import toggles_refresh
from tests.customers.factories import CustomerFactory
from tests.limits.config_io.helpers import row_state
from tests.limits.factories import LimitFactory
from tests.toggles.factories import LocalHttpSource

pytestmark = pytest.mark.django_db

IMPORT_URL = reverse("admin:limits_limit_yaml_import")
QUICK_S = 1.0  # a refusal before anything is built takes milliseconds; a loaded 2-core CI machine gets slack
MESSAGE_CHARS = 1_000  # an error line quotes at most a couple of hundred characters of any value


def billion_laughs(levels: int = 9) -> str:
    """The classic: each level is a list of nine aliases to the level below, 9**levels "lol"s once expanded,
    aimed at a field whose error message quotes the value it got."""
    lines = ['lol0: &lol0 "lol"']
    for level in range(1, levels + 1):
        lines.append(f"lol{level}: &lol{level} [{', '.join([f'*lol{level - 1}'] * 9)}]")
    lines.append(f"limits: [{{name: bomb, operation: Op, algorithm: *lol{levels}, limit: 1, period: minute}}]")
    return "\n".join(lines) + "\n"


def many_aliases(count: int = 100_000) -> str:
    """No expansion to speak of, only a very large number of references to one node."""
    aliases = ", ".join(["*op"] * count)
    return f"operations: [{{name: &op Op}}]\nservices: [{{name: svc, operations: [{aliases}]}}]\n"


def merge_key() -> str:
    """The friendly-looking use of anchors: a merge key. Refused too; the format never needs one."""
    return (
        "operations: [{name: Op}]\n"
        "limits:\n"
        "  - &base {name: one, operation: Op, algorithm: fixed_window, limit: 1, period: minute}\n"
        "  - {<<: *base, name: two}\n"
    )


def deep_nesting(depth: int = 100_000) -> str:
    return "limits: " + "[" * depth + "]" * depth + "\n"


def many_values(count: int = MAX_NODES + 10) -> str:
    return "limits: [" + "0," * count + "0]\n"


def long_number(digits: int = 5_000) -> str:
    return f"operations: [{{name: Op}}]\nlimits: [{{name: x, operation: Op, algorithm: fixed_window, limit: {'7' * digits}, period: minute}}]\n"  # noqa: E501


# name: (document, what the refusal says, how long it may take). Counting half a million values takes a second
# or more on a busy machine (building them would take half a minute and half a gigabyte).
HOSTILE = {
    "billion-laughs": (
        billion_laughs(),
        "line 1, column 7: anchors and aliases (&name, *name) are not allowed",
        QUICK_S,
    ),
    "many-aliases": (many_aliases(), "line 1, column 21: anchors and aliases (&name, *name) are not allowed", QUICK_S),
    "merge-key": (merge_key(), "line 3, column 5: anchors and aliases (&name, *name) are not allowed", QUICK_S),
    "deep-nesting": (deep_nesting(), f"line 1, column {MAX_DEPTH + 8}: nested deeper than {MAX_DEPTH} levels", QUICK_S),
    "many-values": (many_values(), f"the file has more than {MAX_NODES:,} values", 15 * QUICK_S),
    "long-number": (long_number(), "line 2, column 67: a number of 5000 characters", QUICK_S),
}


def errors_of(response: Any) -> list[str]:
    assert response.status_code == 200
    return response.context["preview"].errors


def command_refusal(path: Path) -> str:
    with pytest.raises(CommandError) as caught:
        call_command("import_limits", str(path), stdout=io.StringIO())
    return str(caught.value)


def write_yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "limits.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# --- the admin's import page -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "message", "seconds"), HOSTILE.values(), ids=HOSTILE.keys())
def test_the_admin_refuses_a_hostile_document_quickly_and_writes_nothing(
    admin_client, text: str, message: str, seconds: float
) -> None:
    before = row_state()
    started = time.monotonic()

    response = admin_client.post(IMPORT_URL, {"file": SimpleUploadedFile("limits.yaml", text.encode())})

    elapsed = time.monotonic() - started
    errors = errors_of(response)
    assert any(message in error for error in errors), errors
    assert response.context["apply_form"] is None
    assert elapsed < seconds, elapsed
    assert len(response.content) < 100_000
    assert row_state() == before


def test_the_admin_refuses_a_file_over_the_size_cap(admin_client) -> None:
    text = "operations: []\n" + "#" * MAX_DOCUMENT_BYTES

    response = admin_client.post(IMPORT_URL, {"file": SimpleUploadedFile("limits.yaml", text.encode())})

    assert errors_of(response) == ["the file is larger than 2 MiB"]


def test_a_megabyte_value_in_an_invalid_field_gives_the_admin_a_short_message(admin_client) -> None:
    text = (
        f"operations: [{{name: Op}}]\ncustomers: [{{id: acct-1, timezone: {'Z' * 1_000_000}}}]\n"
        f"limits: [{{name: x, operation: Op, algorithm: {'y' * 1_000_000}, limit: 1, period: minute}}]\n"
    )

    response = admin_client.post(IMPORT_URL, {"file": SimpleUploadedFile("limits.yaml", text.encode())})

    errors = errors_of(response)
    assert any(error.startswith("limits[0] (name: x): algorithm: “yyyy") for error in errors), errors
    assert any("characters left out" in error and "is not one of" in error for error in errors), errors
    assert max(len(error) for error in errors) < MESSAGE_CHARS
    assert len(response.content) < 100_000


# --- manage.py import_limits -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "message", "seconds"), HOSTILE.values(), ids=HOSTILE.keys())
def test_import_limits_refuses_a_hostile_document_quickly_and_writes_nothing(
    tmp_path: Path, text: str, message: str, seconds: float
) -> None:
    before = row_state()
    path = write_yaml(tmp_path, text)
    started = time.monotonic()

    refusal = command_refusal(path)

    elapsed = time.monotonic() - started
    assert message in refusal
    assert elapsed < seconds, elapsed
    assert len(refusal) < MESSAGE_CHARS
    assert row_state() == before


def test_a_billion_laughs_costs_import_limits_almost_no_memory(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, billion_laughs())
    tracemalloc.start()
    try:
        command_refusal(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 20 * 1024 * 1024  # megabytes at most; expanded, it would be gigabytes


def test_import_limits_refuses_a_file_over_the_size_cap(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, "operations: []\n" + "#" * MAX_DOCUMENT_BYTES)

    assert "the file is larger than 2 MiB" in command_refusal(path)


def test_import_limits_refuses_standard_input_over_the_size_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    data = ("operations: []\n" + "#" * MAX_DOCUMENT_BYTES).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))

    with pytest.raises(CommandError, match="the file is larger than 2 MiB"):
        call_command("import_limits", "-", stdout=io.StringIO())


def test_a_megabyte_value_in_an_invalid_field_gives_import_limits_a_short_message(tmp_path: Path) -> None:
    CustomerFactory(external_id="acct-1")
    path = write_yaml(tmp_path, f"customers: [{{id: acct-1, timezone: {'Z' * 1_000_000}}}]\n")

    refusal = command_refusal(path)

    assert "customers[0] (id: acct-1): timezone: “ZZZZ" in refusal
    assert "is not a known time zone" in refusal
    assert len(refusal) < MESSAGE_CHARS


# --- the toggles refresh from its external source ------------------------------------------------

LAST_KNOWN_GOOD = {"toggles": [{"name": "safe", "enabled": True}]}


@pytest.fixture
def refresh_paths(settings: Any, tmp_path: Path) -> tuple[Path, Path]:
    """(source file, last-known-good file), the last-known-good one already holding a good document."""
    settings.QUOTA_TOGGLES_TIMEOUT_S = 2
    lkg = tmp_path / "lkg.json"
    lkg.write_text(json.dumps(LAST_KNOWN_GOOD))
    LimitFactory(name="daily", quantity=10)
    CustomerFactory(external_id="acct-1")
    return tmp_path / "source.json", lkg


def nested_json(depth: int) -> str:
    return json.dumps({"toggles": [{"name": "deep", "enabled": True, "payload": "@"}]}).replace(
        '"@"', "[" * depth + "]" * depth
    )


TOGGLES_HOSTILE = {
    "yaml-billion-laughs": (billion_laughs(), "not valid JSON: line 1, column 1"),
    "deep-nesting": (nested_json(100_000), "nested deeper than 32 levels"),
    "payload-too-deep": (nested_json(300), "nested deeper than 32 levels"),
    "long-number": (
        '{"toggles": [{"name": "n", "enabled": true, "payload": ' + "7" * 5_000 + "}]}",
        "not valid JSON: a number of more than 4300 digits",
    ),
    "number-the-api-cannot-send": (
        json.dumps({"toggles": [{"name": "n", "enabled": True, "payload": 2**70}]}),
        "toggles[0] (name: n): payload: cannot be sent as JSON: Integer exceeds 64-bit range",
    ),
    "megabyte-value": (
        json.dumps({"overrides": [{"customer": "acct-1", "limit": "x" * 900_000, "quantity": 1}]}),
        "overrides[0] (customer: acct-1, limit: xxxx",
    ),
}


def assert_fell_back(report: Any, message: str) -> None:
    assert message in report.error, report.error[:2_000]
    assert len(report.error) < MESSAGE_CHARS + 300  # plus the words about the last-known-good file
    assert (report.fetched_ok, report.used_last_known_good) == (False, True)
    assert {toggle.name: (toggle.enabled, toggle.source) for toggle in FeatureToggle.objects.all()} == {
        "safe": (True, ToggleSource.EXTERNAL)
    }


@pytest.mark.parametrize(("body", "message"), TOGGLES_HOSTILE.values(), ids=TOGGLES_HOSTILE.keys())
def test_a_hostile_file_source_is_refused_and_the_last_known_good_applies(
    refresh_paths: tuple[Path, Path], body: str, message: str
) -> None:
    source, lkg = refresh_paths
    source.write_text(body)
    started = time.monotonic()

    report = toggles_refresh(source=str(source), lkg_path=lkg)

    assert time.monotonic() - started < QUICK_S
    assert_fell_back(report, message)


@pytest.mark.parametrize(("body", "message"), TOGGLES_HOSTILE.values(), ids=TOGGLES_HOSTILE.keys())
def test_a_hostile_url_source_is_refused_and_the_last_known_good_applies(
    settings: Any,
    refresh_paths: tuple[Path, Path],
    body: str,
    message: str,
) -> None:
    settings.QUOTA_TOGGLES_ALLOW_PRIVATE = True
    _, lkg = refresh_paths
    with LocalHttpSource() as source:
        source.serve(body=body.encode())
        report = toggles_refresh(source=source.url, lkg_path=lkg)

    assert_fell_back(report, message)
