"""Which names of a module namespace (a notebook's) came from libraries, and the lines that say so.

A notebook's imports are context the model needs once, not data: `import pandas as pd` tells it what `pd`
is, and `from numpy import *` tells it that `max(a, b)` here is numpy's `max`, whose second argument is an
axis. So every imported name is named on a few lines at the end of the locals summary instead of getting a
line of its own:

* `imported: pandas as pd, numpy as np, collections (Counter, deque, …)`: the modules first, then one part per
  source module of the other names, each in name order (a star import binds names in its module's `__all__`
  order, which numpy builds from a set: any other order would change the prompt from one kernel to the next);
* `from numpy import * (shadows builtins abs, all, any, max, min, round, sum)`: one line per star-imported
  module. Its names are never counted or listed as the user's, nor are the submodules it binds.
"""

from __future__ import annotations

import builtins
import dataclasses
import re
import sys
import types
from collections.abc import Collection, Iterable, Mapping

from ._summaries import MISSING, alias_target

__all__ = ["Imports", "find_imports", "import_lines"]

# Names listed per source module on the `imported:` line; the model asks `nh_eval` (`dir()`) for the rest.
_NAMES_PER_MODULE = 3
# A module counts as star-imported when the namespace holds at least this many of its exported names, and
# this share of them, each bound to the module's own object: a few names imported by hand never do.
_STAR_LEAST_NAMES = 8
_STAR_SHARE = 0.75
_STAR_IMPORT = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+\*", re.MULTILINE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Imports:
    """What a namespace imported from libraries."""

    sources: Mapping[str, str]
    """Each imported name (module, function, class, typing form, library constant) and the module it came from."""

    star: Mapping[str, tuple[str, ...]]
    """Each star-imported module (in name order) and the builtins its names shadow here."""

    starred: frozenset[str]
    """The names a star import bound (listed on its line, never as the user's)."""


def _public_paths(module: str) -> list[str]:
    """Where a library may export a name from `module`, shortest first (`pandas` before `pandas.core.frame`);
    an underscore module is tried after its public twin (`functools` before `_functools`)."""
    parts = module.split(".")
    paths: list[str] = []
    for end in range(1, len(parts) + 1):
        path = ".".join(parts[:end])
        if parts[end - 1].startswith("_"):
            paths.append(".".join((*parts[: end - 1], parts[end - 1].lstrip("_"))))
        paths.append(path)
    return paths


def _library_module(name: str, value: object, home: str) -> str | None:
    """The library module `value` (bound to `name`) was imported from, or `None` when it is the notebook's own.

    A module is its own source. A function, class or typing form counts as imported when a module other than
    `home` (the notebook's `__name__`) holds it under its own name; data, instances and aliases the notebook
    wrote (`Rows = list[dict]`) are the notebook's.
    """
    if isinstance(value, types.ModuleType):
        return value.__name__
    if not callable(value) and alias_target(value) is MISSING:
        return None
    try:
        module = getattr(value, "__module__", None)
        if module is None and hasattr(value, "__self__"):  # `random.random`: a method of the module's instance
            module = type(value.__self__).__module__
        own = getattr(value, "__name__", name)
    except Exception:  # a custom __getattr__
        return None
    if not isinstance(module, str) or module in (home, "__main__"):
        return None
    for path in _public_paths(module):
        source = sys.modules.get(path)
        # The module's own dict, not getattr: a lazy module `__getattr__` would import or warn.
        if source is not None and any(vars(source).get(key) is value for key in {own, name} if isinstance(key, str)):
            return path
    return None


def _exported(module: types.ModuleType) -> list[str]:
    """The names `from module import *` binds: its `__all__`, else its public names."""
    names = vars(module).get("__all__")
    if isinstance(names, list | tuple) and all(isinstance(name, str) for name in names):
        return list(names)
    return [name for name in vars(module) if not name.startswith("_")]


def _star_names(namespace: Mapping[str, object], module: types.ModuleType, *, written: bool) -> list[str] | None:
    """The names of `namespace` a star import of `module` bound (still its objects), or `None` when it has none.
    Without the import `written` in the history, most of the module's names must be there."""
    own = vars(module)
    exported = [name for name in _exported(module) if name in own]
    bound = [name for name in exported if namespace.get(name, MISSING) is own[name]]
    if bound and (written or len(bound) >= _STAR_LEAST_NAMES and len(bound) >= _STAR_SHARE * len(exported)):
        return bound
    return None


def _written_star_imports(history: object) -> set[str]:
    """The modules the cells of an input history (`_ih`) star-import."""
    cells = history if isinstance(history, list) else []
    return {module for cell in cells if isinstance(cell, str) and "*" in cell for module in _STAR_IMPORT.findall(cell)}


def find_imports(namespace: Mapping[str, object], home: object, history: object = None) -> Imports:
    """Which names of `namespace` came from libraries (see the module notes); `home` is the namespace's
    `__name__` (its own functions and classes carry it as their `__module__`), `history` its input history."""
    home_name = home if isinstance(home, str) else "__main__"
    sources = {name: source for name, value in namespace.items() if (source := _library_module(name, value, home_name))}
    written = _written_star_imports(history)
    candidates = sorted({source for source in (*sources.values(), *written) if source in sys.modules})
    star: dict[str, tuple[str, ...]] = {}
    starred: set[str] = set()
    for source in candidates:
        module = sys.modules[source]
        bound = _star_names(namespace, module, written=source in written)
        if bound is None:
            continue
        star[source] = tuple(sorted(name for name in bound if hasattr(builtins, name) and not name.startswith("_")))
        starred.update(bound)
        sources.update(dict.fromkeys(bound, source))
    # A constant imported with functions (`from math import pi, sqrt`) is the library's too: found by identity
    # in a module something else was imported from.
    modules = [sys.modules[source] for source in dict.fromkeys(sources.values()) if source in sys.modules]
    for name, value in namespace.items():
        if name not in sources and not callable(value):
            found = next((module.__name__ for module in modules if vars(module).get(name, MISSING) is value), None)
            if found is not None:
                sources[name] = found
    return Imports(sources=sources, star=star, starred=frozenset(starred))


def import_lines(imports: Imports, namespace: Mapping[str, object], *, shown: Collection[str] = ()) -> list[str]:
    """The `from M import *` lines, then the `imported:` line of the other imported names (see the module notes);
    names `shown` with a line of their own are left off it, but for modules."""
    lines = [
        f"from {module} import *" + (f" (shadows builtins {', '.join(shadowed)})" if shadowed else "")
        for module, shadowed in imports.star.items()
    ]
    others = sorted(
        (
            (name, namespace[name], source)
            for name, source in imports.sources.items()
            if name not in imports.starred and (name not in shown or isinstance(namespace[name], types.ModuleType))
        ),
        key=lambda item: (item[2], item[0]),
    )
    parts = _imported_parts(others)
    if parts:
        lines.append("imported: " + ", ".join(parts))
    return lines


def _imported_parts(imports: Iterable[tuple[str, object, str]]) -> list[str]:
    """The parts of the `imported:` line: the modules, then one part per source module of the other names."""
    modules: dict[str, list[str]] = {}
    names: dict[str, list[str]] = {}
    for name, value, source in imports:
        if isinstance(value, types.ModuleType):
            modules.setdefault(source, []).append(source if name == source else f"{source} as {name}")
        else:
            own = getattr(value, "__name__", name)
            names.setdefault(source, []).append(name if own == name else f"{own} as {name}")
    parts: list[str] = []
    for source in dict.fromkeys((*modules, *names)):
        parts.extend(modules.get(source, ()))
        if source in names:
            listed = names[source][:_NAMES_PER_MODULE] + (["…"] if len(names[source]) > _NAMES_PER_MODULE else [])
            parts.append(f"{source} ({', '.join(listed)})")
    return parts
