"""The shape of the code: which apps import each other both ways, crowded packages, long modules and functions,
`# fmt: skip` lines, and how many files name each algorithm.

    python tools/house.py            # a report in words
    python tools/house.py --json     # the same as JSON (tests/test_layout.py reads `measure()`)

Counted: every Python file of the project outside tests, migrations and the virtualenv. An import of
`apps.<other>` from a file of `apps/<app>/` is an edge app -> other, whether it runs at import time,
inside a function or only for type checking: each is a reason the two apps cannot be read apart. So is a dotted
path in a string (`import_string("apps.x.selectors.f")`, `include("apps.x.urls")`): an import the code makes later.
The line caps are smell detectors, not targets: a module near one is a question about its ideas, never a reason to
fold lines or add `# fmt: skip`.
Function length is from its `def` line to its last line, decorators and docstring included.
"""

from __future__ import annotations

import ast
import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_FOLDERS = ("apps", "quota_platform", "clients", "bench", "tools")
SKIPPED_PARTS = frozenset({"migrations", "tests", ".venv", "__pycache__", "build"})
APP_IMPORT = re.compile(r"^\s*(?:from|import)\s+apps\.(\w+)", re.MULTILINE)
APP_PATH_IN_STRING = re.compile(r"""["']apps\.(\w+)\.[\w.]+["']""")
FMT_SKIP = re.compile(r"#\s*fmt:\s*skip\s*$")
MAX_MODULE_LINES = 300
# Smells, counted rather than forbidden one by one: modules this long, packages this crowded.
LONG_MODULE_LINES = 250
MAX_MODULES_SIDE_BY_SIDE = 20
MAX_FUNCTION_LINES = 40
# The one settings module (STYLE: every setting read from the environment in one place, in banner sections) grows
# with every setting and the comment saying what it is for: splitting it would break that rule, squeezing it would
# drop the comments. Its length says nothing about a room in the wrong place.
LENGTH_EXEMPT_MODULES = frozenset({"quota_platform/settings.py"})
# The OpenAPI documentation of an endpoint (apps/**/schema_docs.py): its example payloads name algorithms as a
# reader would write them, like docs/; adding an algorithm never has to change them.
DOCUMENTATION_MODULES = frozenset({"schema_docs.py"})


@dataclass
class House:
    pairs: list[tuple[str, str]] = field(default_factory=list)
    edges: dict[str, set[str]] = field(default_factory=dict)
    long_modules: dict[str, int] = field(default_factory=dict)
    module_lengths: dict[str, int] = field(default_factory=dict)
    fmt_skips: list[str] = field(default_factory=list)
    function_lengths: dict[str, int] = field(default_factory=dict)

    @property
    def long_functions(self) -> dict[str, int]:
        return {name: size for name, size in self.function_lengths.items() if size > MAX_FUNCTION_LINES}

    @property
    def near_cap_modules(self) -> dict[str, int]:
        return {
            name: size
            for name, size in self.module_lengths.items()
            if size > LONG_MODULE_LINES and name not in LENGTH_EXEMPT_MODULES
        }

    def function_figures(self) -> dict[str, float]:
        sizes = sorted(self.function_lengths.values())
        return {
            "functions": len(sizes),
            "median": statistics.median(sizes),
            "p90": sizes[int(0.9 * (len(sizes) - 1))],
            "max": sizes[-1],
        }


def source_files(root: Path = ROOT) -> list[Path]:
    found = []
    for folder in SOURCE_FOLDERS:
        found += [path for path in (root / folder).rglob("*.py") if not SKIPPED_PARTS & set(path.parts)]
    return sorted(found)


def app_edges(root: Path = ROOT) -> dict[str, set[str]]:
    """app -> the other apps its files import."""
    edges: dict[str, set[str]] = {}
    for path in source_files(root):
        relative = path.relative_to(root).parts
        if relative[0] != "apps" or len(relative) < 3:
            continue
        app = relative[1]
        text = path.read_text()
        for other in {*APP_IMPORT.findall(text), *APP_PATH_IN_STRING.findall(text)}:
            if other != app:
                edges.setdefault(app, set()).add(other)
    return edges


def two_way_pairs(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    found = {tuple(sorted((a, b))) for a, others in edges.items() for b in others if a in edges.get(b, set())}
    return sorted(found)  # type: ignore[arg-type]


def function_lengths(path: Path, root: Path = ROOT) -> dict[str, int]:
    tree = ast.parse(path.read_text(), filename=str(path))
    name = str(path.relative_to(root))
    lengths = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            lengths[f"{name}:{node.lineno}:{node.name}"] = (node.end_lineno or node.lineno) - first + 1
    return lengths


def measure(root: Path = ROOT) -> House:
    house = House(edges=app_edges(root))
    house.pairs = two_way_pairs(house.edges)
    for path in source_files(root):
        text, name = path.read_text(), str(path.relative_to(root))
        lines = house.module_lengths[name] = len(text.splitlines())
        if lines > MAX_MODULE_LINES and name not in LENGTH_EXEMPT_MODULES:
            house.long_modules[name] = lines
        house.fmt_skips += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if FMT_SKIP.search(line)]
        house.function_lengths.update(function_lengths(path, root))
    return house


def crowded_packages(root: Path = ROOT) -> dict[str, int]:
    """Package folders with more than MAX_MODULES_SIDE_BY_SIDE modules beside each other: rooms to split by job."""
    counts: dict[str, int] = {}
    for path in source_files(root):
        if path.name != "__init__.py":
            folder = str(path.parent.relative_to(root))
            counts[folder] = counts.get(folder, 0) + 1
    return {folder: count for folder, count in sorted(counts.items()) if count > MAX_MODULES_SIDE_BY_SIDE}


def algorithm_names(root: Path = ROOT) -> list[str]:
    """The registry's algorithm names (apps/engine/registry.py is plain Python: no Django to set up)."""
    sys.path.insert(0, str(root))
    try:
        from apps.engine.registry import ALGORITHMS
    finally:
        sys.path.remove(str(root))
    return sorted(ALGORITHMS)


def files_naming_algorithms(root: Path = ROOT) -> dict[str, list[str]]:
    """algorithm -> the files under apps/ (Python, Lua, templates; not tests, migrations or the API documentation's
    example payloads, DOCUMENTATION_MODULES) that spell its name.
    One place per fact: an algorithm is its registry entry, its fragment and little else."""
    files = [
        path
        for path in (root / "apps").rglob("*")
        if path.suffix in {".py", ".lua", ".html", ".js"}
        and not SKIPPED_PARTS & set(path.parts)
        and path.name not in DOCUMENTATION_MODULES
    ]
    texts = {str(path.relative_to(root)): path.read_text() for path in files}
    return {
        name: sorted(file for file, text in texts.items() if _spelling(name).search(text))
        for name in algorithm_names(root)
    }


def _spelling(name: str) -> re.Pattern[str]:
    """The name as code uses it: a string literal, its fragment file, a module imported, its constant. Prose in
    comments ("a concurrency limit", "calendar days") is not a place a change has to go."""
    return re.compile(
        rf"""["']{name}["']|\b{name}\.lua\b|^\s*(?:from|import)\s+[\w.]*\b{name}\b|(?:from\s+[\w.]+\s+)?import\s+"""
        rf"""(?:[\w, ]*,\s*)?{name}\b|\b{name.upper()}\b""",
        re.MULTILINE,
    )


def report(house: House) -> str:
    pairs = ", ".join(f"{a}<->{b}" for a, b in house.pairs) or "none"
    lines = [f"apps importing each other both ways ({len(house.pairs)}): {pairs}"]
    modules = ", ".join(f"{name} ({size})" for name, size in sorted(house.long_modules.items())) or "none"
    lines.append(f"modules over {MAX_MODULE_LINES} lines: {modules}")
    near = ", ".join(f"{name} ({size})" for name, size in sorted(house.near_cap_modules.items())) or "none"
    lines.append(f"modules over {LONG_MODULE_LINES} lines ({len(house.near_cap_modules)}): {near}")
    crowded = ", ".join(f"{folder} ({count})" for folder, count in crowded_packages().items()) or "none"
    lines.append(f"packages with over {MAX_MODULES_SIDE_BY_SIDE} modules side by side: {crowded}")
    lines.append(f"# fmt: skip lines ({len(house.fmt_skips)}): {', '.join(house.fmt_skips) or 'none'}")
    naming = ", ".join(f"{name} {len(files)}" for name, files in files_naming_algorithms().items())
    lines.append(f"files under apps/ naming each algorithm: {naming}")
    figures = house.function_figures()
    counts = f"median {figures['median']} lines, p90 {figures['p90']}, max {figures['max']}"
    lines.append(f"functions: {figures['functions']}, {counts}")
    long = ", ".join(f"{name} ({size})" for name, size in sorted(house.long_functions.items())) or "none"
    lines.append(f"functions over {MAX_FUNCTION_LINES} lines: {long}")
    return "\n".join(lines)


def main(arguments: list[str]) -> int:
    house = measure()
    if "--json" in arguments:
        body = {
            "pairs": house.pairs,
            "long_modules": house.long_modules,
            "near_cap_modules": house.near_cap_modules,
            "crowded_packages": crowded_packages(),
            "fmt_skips": house.fmt_skips,
            "files_naming_algorithms": files_naming_algorithms(),
            "functions": house.function_figures(),
            "long_functions": house.long_functions,
        }
        print(json.dumps(body, indent=2))
    else:
        print(report(house))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
