"""The shape of the house, held where it is (tools/house.py measures it): apps depend one way, modules and
functions stay short. A new two-way pair or a long module fails here with the names to look at."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The pairs left, and why; any other pair is a room in the wrong place.
ALLOWED_TWO_WAY_PAIRS = [
    # The customer's admin page carries its keys and its overrides and rules inline (customers/admin.py),
    # while keys, overrides and rules belong to a customer.
    ("apikeys", "customers"),
    ("customers", "limits"),
    # The external toggles document carries hot overrides, which limits applies, and the config snapshot
    # (limits) compiles the toggles.
    ("limits", "toggles"),
]


@pytest.fixture(scope="module")
def house():
    spec = importlib.util.spec_from_file_location("house", ROOT / "tools" / "house.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["house"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_apps_import_each_other_one_way_but_for_the_named_pair(house) -> None:
    assert house.two_way_pairs(house.app_edges(ROOT)) == ALLOWED_TWO_WAY_PAIRS


def test_the_operator_console_is_imported_by_no_other_app(house) -> None:
    importers = [app for app, others in house.app_edges(ROOT).items() if "console" in others]

    assert importers == []


def test_no_module_is_over_300_lines(house) -> None:
    assert house.measure(ROOT).long_modules == {}


def test_no_function_is_over_40_lines(house) -> None:
    assert house.measure(ROOT).long_functions == {}


def test_two_way_pairs_are_found_whichever_file_imports(house, tmp_path) -> None:
    for app, other in (("a", "b"), ("b", "a"), ("b", "c")):
        folder = tmp_path / "apps" / app
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"uses_{other}.py").write_text(f"def f():\n    from apps.{other}.models import X\n")

    assert house.two_way_pairs(house.app_edges(tmp_path)) == [("a", "b")]
