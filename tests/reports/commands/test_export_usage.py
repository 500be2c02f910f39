"""manage.py export_usage: the admin's filters and formats, a progress bar on stderr, clear errors."""

import io

import pytest
from django.core.management import CommandError, call_command

from apps.reports.management.commands import export_usage
from tests.reports.usage_set import PARSERS, all_days, db_rows, usage_generate

pytestmark = pytest.mark.django_db

DAYS = ["--from", "2026-03-01", "--to", "2026-03-04"]


def run(*args: str) -> tuple[str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    call_command("export_usage", *args, stdout=stdout, stderr=stderr)
    return stdout.getvalue(), stderr.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_it_writes_the_report_to_a_file_and_shows_progress_on_stderr(tmp_path, monkeypatch, fmt) -> None:
    monkeypatch.setattr(export_usage, "PROGRESS_EVERY", 10)
    monkeypatch.setattr(export_usage, "BAR_REDRAW_S", 0)
    count = usage_generate("hour")
    output = tmp_path / f"report.{fmt}"

    stdout, stderr = run(*DAYS, "--format", fmt, "--output", str(output))

    assert stdout == ""
    assert PARSERS[fmt](output.read_bytes()) == db_rows(all_days())
    assert f"{count}/{count}" in stderr, stderr
    assert "100%" in stderr
    assert "| 10/96 [" in stderr, "the bar moves while rows are written"
    assert stderr.rstrip().endswith(f"Wrote {count} rows as {export_usage.FORMATS[fmt].label} to {output}.")
    assert [path.name for path in tmp_path.iterdir()] == [output.name], "no .part file is left"


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_go_to_stdout_without_output(fmt) -> None:
    usage_generate("day", per_series=2)

    stdout, stderr = run(*DAYS, "--granularity", "day", "--format", fmt, "--customer", "acct-1", "--customer", "acct-2")

    filters = all_days("day", customers=("acct-1", "acct-2"))
    assert PARSERS[fmt](stdout.encode()) == db_rows(filters)
    assert len(db_rows(filters)) == 8
    assert "Wrote 8 rows" in stderr


def test_operations_narrow_the_report() -> None:
    usage_generate("hour", per_series=1)

    stdout, _ = run(*DAYS, "--operation", "ModifyShardCount")

    assert {row[1] for row in PARSERS["csv"](stdout.encode())} == {"ModifyShardCount"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "yesterday", "--to", "2026-03-04"], "--from: Enter a day as YYYY-MM-DD, e.g. 2026-03-01."),
        (["--from", "2026-03-05", "--to", "2026-03-04"], "--to: The last day (2026-03-04) is before the first day"),
        ([*DAYS, "--granularity", "week"], "--granularity: Select a valid choice. week is not one of the available"),
        ([*DAYS, "--format", "pdf"], "--format: Select a valid choice. pdf is not one of the available choices."),
        ([*DAYS, "--customer", "x" * 201], "--customer: Each customer has at most 200 characters"),
        ([*DAYS, "--format", "xlsx"], "XLSX is a binary file: give --output FILE."),
        ([*DAYS, "--output", "/no/such/folder/report.csv"], "--output: the folder /no/such/folder does not exist."),
        (["--to", "2026-03-04"], "the following arguments are required: --from"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message_and_writes_nothing(tmp_path, args, message) -> None:
    with pytest.raises(CommandError) as refused:
        run(*args)

    assert message in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_output_is_a_clear_error(tmp_path) -> None:
    folder = tmp_path / "report.csv"
    folder.mkdir()

    with pytest.raises(CommandError, match=r"Cannot write .*report\.csv: Is a directory"):
        run(*DAYS, "--output", str(folder))
