"""manage.py import_limits: read the file, import it, print the changes in plain words."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.limits.models import Limit, Operation

pytestmark = pytest.mark.django_db

LIMITS = """
operations: [{name: ModifyShardCount}]
limits:
  - {name: daily, operation: ModifyShardCount, algorithm: calendar, limit: 10, period: day}
"""


def run(*args: str) -> str:
    out = StringIO()
    call_command("import_limits", *args, stdout=out)
    return out.getvalue()


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "limits.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_it_imports_the_file_and_prints_what_it_created(tmp_path: Path) -> None:
    output = run(write(tmp_path, LIMITS))

    assert "operations: 1 created, 0 updated, 0 deleted" in output
    assert "limits: 1 created, 0 updated, 0 deleted\n  created daily" in output
    assert Limit.objects.get().calendar_period == "day"


def test_it_prints_no_changes_when_the_file_matches_the_database(tmp_path: Path) -> None:
    path = write(tmp_path, LIMITS)
    run(path)

    assert run(path).strip() == "no changes"


def test_it_prints_updated_fields_with_old_and_new_values(tmp_path: Path) -> None:
    run(write(tmp_path, LIMITS))

    output = run(write(tmp_path, LIMITS.replace("limit: 10", "limit: 20")))

    assert "limits: 0 created, 1 updated, 0 deleted\n  updated daily: limit 10 → 20" in output


def test_dry_run_prints_the_changes_and_writes_nothing(tmp_path: Path) -> None:
    output = run(write(tmp_path, LIMITS), "--dry-run")

    assert output.startswith("Dry run: nothing was written.")
    assert "  created daily" in output
    assert Operation.objects.count() == 0


def test_prune_deletes_what_the_file_no_longer_names(tmp_path: Path) -> None:
    run(write(tmp_path, LIMITS))

    output = run(write(tmp_path, "limits: []"), "--prune")

    assert "limits: 0 created, 0 updated, 1 deleted\n  deleted daily" in output
    assert Limit.objects.count() == 0
    assert Operation.objects.count() == 1


def test_an_invalid_file_fails_with_every_problem_and_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, LIMITS.replace("period: day", "period: 86400") + "customers: [{id: acct-1, colour: red}]")

    with pytest.raises(CommandError) as caught:
        run(path)

    assert str(caught.value).splitlines() == [
        "The configuration was refused; nothing was written.",
        "  customers[0] (id: acct-1): colour: unknown key; the keys are id, name, plan, timezone, active",
        "  limits[0] (name: daily): period: a calendar limit counts per day, week or month, not 86400",
    ]
    assert Operation.objects.count() == 0


def test_a_file_with_bad_yaml_syntax_fails_with_its_position(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"not valid YAML: line 1, column 1"):
        run(write(tmp_path, "]"))


def test_a_missing_file_fails_with_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"Cannot read .*missing\.yaml: No such file or directory"):
        run(str(tmp_path / "missing.yaml"))


def test_the_help_says_that_prune_leaves_absent_sections_alone(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        call_command("import_limits", "--help")

    assert "absent from the file is left untouched" in " ".join(capsys.readouterr().out.split())
