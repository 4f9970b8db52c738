"""What the docs tell users to import is what the package exports, and every export is declared where it lives."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import nighthawk

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

# In prose, `nh.name` is the API and `nighthawk.name` is usually a span name (`nighthawk.step`), except that a
# private module is never something to send users to.
_PROSE_ATTRIBUTE = re.compile(r"\bnh\.([A-Za-z_]\w*)|\bnighthawk\.(_\w*)")
_FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _package_attributes() -> set[tuple[str, str]]:
    """`(page, name)` for every attribute taken from the package, in prose and in Python blocks."""
    found = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found.update((page.name, api or private) for api, private in _PROSE_ATTRIBUTE.findall(text))
        for block in _FENCE.findall(text):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    if node.value.id in ("nh", "nighthawk"):
                        found.add((page.name, node.attr))
    return found


def _from_imports() -> set[tuple[str, str, str]]:
    """`(page, module, name)` for every `from nighthawk... import name` in the pages' Python blocks."""
    found = set()
    for page in PAGES:
        for block in _FENCE.findall(page.read_text(encoding="utf-8")):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "nighthawk":
                    found.update((page.name, node.module, alias.name) for alias in node.names)
    return found


def _is_public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


@pytest.mark.parametrize(("page", "name"), sorted(_package_attributes()))
def test_a_name_the_docs_take_from_the_package_is_exported(page: str, name: str) -> None:
    assert not name.startswith("_"), f"{page} sends users to the private `nighthawk.{name}`"
    if name in nighthawk.__all__:
        return
    # Otherwise it must be a public submodule (`nighthawk.testing`, `nighthawk.replay`, ...).
    importlib.import_module(f"nighthawk.{name}")


@pytest.mark.parametrize(("page", "module", "name"), sorted(_from_imports()))
def test_a_name_the_docs_import_is_in_its_modules_all(page: str, module: str, name: str) -> None:
    assert _is_public_module(module), f"{page} imports from the private module `{module}`"
    imported = importlib.import_module(module)
    if name in getattr(imported, "__all__", ()):
        return
    # `from nighthawk import events`: a public submodule of a package.
    assert hasattr(imported, "__path__") and _is_public_module(name), (
        f"{page} imports `{name}` from `{module}`, which does not export it"
    )
    importlib.import_module(f"{module}.{name}")


@pytest.mark.parametrize("name", sorted(nighthawk.__all__))
def test_every_export_is_declared_by_the_module_that_defines_it(name: str) -> None:
    value = getattr(nighthawk, name)
    home = getattr(value, "__module__", None)
    if home is None or home == "typing":  # a type alias has no home of its own
        return
    assert name in importlib.import_module(home).__all__, f"`{name}` is missing from `{home}.__all__`"
