"""The shape of the house, held where it is (tools/house.py measures it): apps depend one way, modules and
functions stay short. A new two-way pair or a long module fails here with the names to look at."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The pair left, and why; any other pair is a room in the wrong place.
ALLOWED_TWO_WAY_PAIRS = [
    # The external toggles document carries hot overrides, which limits applies, and the config snapshot
    # (limits) compiles the toggles.
    ("limits", "toggles"),
]
# Smells the issue that split enforcement into rooms counted, held where they ended (tools/house.py says which).
MAX_NEAR_CAP_MODULES = 5
MAX_FMT_SKIPS = 5
MAX_FILES_NAMING_AN_ALGORITHM = 4


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


def test_few_modules_come_near_the_cap(house) -> None:
    assert len(house.measure(ROOT).near_cap_modules) <= MAX_NEAR_CAP_MODULES, house.measure(ROOT).near_cap_modules


def test_no_package_holds_more_than_20_modules_side_by_side(house) -> None:
    assert house.crowded_packages(ROOT) == {}


def test_fmt_skip_is_kept_for_the_few_lines_it_helps_read(house) -> None:
    skips = house.measure(ROOT).fmt_skips

    assert len(skips) <= MAX_FMT_SKIPS, skips


def test_each_algorithm_is_named_in_a_few_files_outside_tests(house) -> None:
    naming = house.files_naming_algorithms(ROOT)

    assert {name: files for name, files in naming.items() if len(files) > MAX_FILES_NAMING_AN_ALGORITHM} == {}


def test_a_dotted_path_in_a_string_counts_as_an_import(house, tmp_path) -> None:
    for app, text in (("a", 'URLS = include("apps.b.urls")\n'), ("b", "from apps.a.models import X\n")):
        folder = tmp_path / "apps" / app
        folder.mkdir(parents=True)
        (folder / "uses.py").write_text(text)

    assert house.two_way_pairs(house.app_edges(tmp_path)) == [("a", "b")]


def test_two_way_pairs_are_found_whichever_file_imports(house, tmp_path) -> None:
    for app, other in (("a", "b"), ("b", "a"), ("b", "c")):
        folder = tmp_path / "apps" / app
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"uses_{other}.py").write_text(f"def f():\n    from apps.{other}.models import X\n")

    assert house.two_way_pairs(house.app_edges(tmp_path)) == [("a", "b")]
