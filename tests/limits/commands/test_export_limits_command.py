"""manage.py export_limits: the configuration as YAML that import_limits takes back without a change."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.limits.config_io.helpers import build_varied_config, row_state
from tests.limits.factories import CalendarLimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def test_it_writes_the_design_shape_to_standard_output() -> None:
    CalendarLimitFactory(name="daily", operation=OperationFactory(name="ModifyShardCount"), key_by=["customer"])

    output = run("export_limits")

    assert output.startswith("operations:\n  - name: ModifyShardCount\n    description: ''\nplans: []\n")
    assert (
        "limits:\n  - name: daily\n    description: ''\n    operation: ModifyShardCount\n    algorithm: calendar\n"
        "    limit: 10\n    period: day\n    burst: null\n    unit: requests\n    key_by: [customer]\n"
    ) in output


def test_importing_its_output_prints_no_changes_and_changes_no_row(tmp_path: Path) -> None:
    build_varied_config()
    path = tmp_path / "limits.yaml"
    path.write_text(run("export_limits"), encoding="utf-8")
    before = row_state()

    output = run("import_limits", str(path))

    assert output.strip() == "no changes"
    assert row_state() == before


def test_output_writes_the_file_instead_of_standard_output(tmp_path: Path) -> None:
    OperationFactory(name="Op")
    path = tmp_path / "out.yaml"

    output = run("export_limits", "--output", str(path))

    assert output.strip() == f"Wrote {path}."
    assert path.read_text(encoding="utf-8") == run("export_limits")
    assert "  - name: Op\n" in path.read_text(encoding="utf-8")
