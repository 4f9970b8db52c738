"""The shape of the code: imports between our modules point one way, and no module outgrows one job.

Every import statement counts, wherever it sits: at module level, inside a function, or under
`if TYPE_CHECKING:`. A function-level import hides a dependency from the reader but not from the code, and
a type a lower layer needs belongs in that layer.
"""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"nighthawk": ROOT / "core" / "nighthawk", "nighthawk_ipython": ROOT / "nighthawk_ipython"}
MAX_MODULE_LINES = 600


def _modules() -> dict[str, Path]:
    """Every module of our two packages, subpackages included, by dotted name."""
    found: dict[str, Path] = {}
    for package, top in PACKAGES.items():
        for path in sorted(top.rglob("*.py")):
            parts = [package, *path.relative_to(top).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported_names(module: str, path: Path) -> set[str]:
    """The dotted names `module` imports, with relative imports resolved (`from . import x` names x)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                prefix = ".".join([*base, *([node.module] if node.module else [])])
            else:
                prefix = node.module or ""
            submodules = {f"{prefix}.{alias.name}" for alias in node.names} & MODULES.keys()
            names.update(submodules or {prefix})
    return names


def _own_dependencies(module: str, path: Path) -> set[str]:
    """The modules of ours that `module` imports (a name inside a module counts as that module)."""
    dependencies = set()
    for name in _imported_names(module, path):
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module:
            dependencies.add(name)
    return dependencies


def test_modules_import_each_other_in_one_direction() -> None:
    graph = {module: _own_dependencies(module, path) for module, path in MODULES.items()}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        circle = " -> ".join(error.args[1])
        pytest.fail(f"import circle between our modules: {circle}")


def _room(module: str) -> str:
    """The part of the house a module belongs to: a package of the core (`nighthawk.model`), a loose module at
    its root (`nighthawk.errors`), the core's face (`nighthawk`), or the kernel extension as a whole."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "nighthawk" else parts[0]


def _rooms_importing_each_other(graph: dict[str, set[str]]) -> list[str]:
    """The imports between rooms that close a circle (each `room -> room (module -> module)`), or none."""
    rooms: dict[str, set[str]] = {}
    why: dict[tuple[str, str], str] = {}
    for module, dependencies in graph.items():
        for dependency in dependencies:
            pair = (_room(module), _room(dependency))
            if pair[0] != pair[1]:
                rooms.setdefault(pair[0], set()).add(pair[1])
                why.setdefault(pair, f"{module} -> {dependency}")
    try:
        graphlib.TopologicalSorter(rooms).prepare()
    except graphlib.CycleError as error:
        circle = error.args[1]
        return [f"{a} -> {b} ({why[(a, b)]})" for a, b in zip(circle, circle[1:])]
    return []


def test_packages_import_each_other_in_one_direction() -> None:
    # Between the core's packages and loose modules the imports run one way too: a package that imports a
    # module of one above it (say the renderers importing the step) runs back up, even with no circle of modules.
    graph = {module: _own_dependencies(module, path) for module, path in MODULES.items()}
    circle = _rooms_importing_each_other(graph)
    assert not circle, "imports run back up between our packages: " + "; ".join(circle)


def test_the_package_check_sees_an_import_that_runs_back_up() -> None:
    graph = {
        "nighthawk.step._context": {"nighthawk.prompting._render"},
        "nighthawk.prompting._render": set(),
        "nighthawk.prompting._assembly": {"nighthawk.step._context"},
    }
    assert _rooms_importing_each_other(graph)
    del graph["nighthawk.prompting._assembly"]
    assert not _rooms_importing_each_other(graph)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_stays_under_the_line_limit(module: str) -> None:
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module} has {lines} lines; split it by job"


def test_the_circle_check_sees_a_function_level_import() -> None:
    # The check must count imports hidden inside functions, the usual way a circle is dodged.
    dependencies = _own_dependencies("nighthawk", PACKAGES["nighthawk"] / "__init__.py")
    assert "nighthawk_ipython" in dependencies


ARCHITECTURE = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
_NAMED_PATH = re.compile(r"`((?:core/nighthawk|nighthawk_ipython)/[\w/.]*)`")


@pytest.mark.parametrize("path", sorted(set(_NAMED_PATH.findall(ARCHITECTURE))))
def test_every_path_architecture_names_exists(path: str) -> None:
    assert (ROOT / path).exists(), f"ARCHITECTURE.md names {path}, which is not there"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_has_its_place_in_architecture(module: str) -> None:
    path = MODULES[module].relative_to(ROOT).as_posix()
    folder = path.rpartition("/")[0] + "/"
    # A module is placed by its own path, or by its subpackage's folder (`core/nighthawk/replay/`); the
    # package folders themselves place nothing.
    subpackage = folder not in ("core/nighthawk/", "nighthawk_ipython/")
    placed = f"`{path}`" in ARCHITECTURE or (subpackage and f"`{folder}`" in ARCHITECTURE)
    assert placed, f"ARCHITECTURE.md does not say what {path} does"
