"""Modules in a writable folder, imported while guarded code runs: the model's code may have written them.

Under `read_only(writable=[scratch])` the model's code may write `scratch/helper.py` and import it. The
module's code then runs with a namespace of its own, which names its file: the functions it defines carry
no mark of the guards and would run unheld later (at exit, as a callback, when your code calls them). So
such a module is treated as the model's code it may be: importing it while guarded code runs is refused,
with `MODULE_IN_WRITABLE` (the path its argument), checked by the audit hook of `_audit.py` against the
`writable` folders of the guards in force.

Three doors lead there: the import system's finders (`import helper` once `scratch` is on `sys.path`: a
finder put first on `sys.meta_path` asks the others where the module is, and announces a place inside a
writable folder, whatever kind of module it is); code run with `exec` by a library (a loader called
directly, `runpy.run_path`): the name of the file it was compiled from (`co_filename`) tells; and an
extension module's loader called directly (`ExtensionFileLoader(name, path).create_module(spec)`), which
runs the file's native code with no code object and no audit event: every extension module is made by
`_imp.create_dynamic`, which is wrapped to announce its file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

from ._kinds import Enforcement, RuntimeGuard

__all__ = ["MODULE_IN_WRITABLE", "announce_extension_modules", "in_writable_folder", "put_finder_first"]

MODULE_IN_WRITABLE = "nighthawk.module_in_writable"
"""The event raised before a module found in a writable folder is imported while guarded code runs."""


def in_writable_folder(guards: tuple[RuntimeGuard, ...], path: object) -> RuntimeGuard | None:
    """The guard whose `writable` folders hold `path` (a module's file or package folder), if any."""
    if not isinstance(path, str) or not path:
        return None
    resolved = os.path.realpath(path)
    for guard in guards:
        for folder in guard.writable:
            if resolved == folder or resolved.startswith(folder.rstrip(os.sep) + os.sep):
                return guard
    return None


def _announced_here(enforcement: Enforcement | None, place: object) -> None:
    """Announce `place` when guarded code runs here with writable folders and `place` lies in one of them."""
    if enforcement is None or enforcement.mode not in ("evaluation", "handling"):
        return
    if any(guard.writable for guard in enforcement.guards) and in_writable_folder(enforcement.guards, place) is not None:
        sys.audit(MODULE_IN_WRITABLE, place)


class _WrittenModuleFinder:
    """First on `sys.meta_path`: while guarded code with writable folders runs, finds the module with the
    other finders and announces it when it lies in a writable folder; elsewhere it finds nothing."""

    def __init__(self, enforcement_here: Callable[[], Enforcement | None]) -> None:
        self._enforcement_here = enforcement_here

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        enforcement = self._enforcement_here()
        if enforcement is None or enforcement.mode not in ("evaluation", "handling"):
            return None
        if not any(guard.writable for guard in enforcement.guards):
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                for place in (spec.origin, *(spec.submodule_search_locations or ())):
                    _announced_here(enforcement, place)
                return spec  # found once: the import goes on with it
        return None


_finder: _WrittenModuleFinder | None = None


def put_finder_first(enforcement_here: Callable[[], Enforcement | None]) -> None:
    """Make the finder the first on `sys.meta_path` (again, if something was put before it since)."""
    global _finder
    if _finder is None:
        _finder = _WrittenModuleFinder(enforcement_here)
    if not sys.meta_path or sys.meta_path[0] is not _finder:
        if _finder in sys.meta_path:
            sys.meta_path.remove(_finder)
        sys.meta_path.insert(0, _finder)  # type: ignore[arg-type]


def announce_extension_modules(enforcement_here: Callable[[], Enforcement | None]) -> None:
    """Wrap `_imp.create_dynamic`, which makes every extension module (the import system looks it up on `_imp`
    at each call), so that one made from a file in a writable folder while guarded code runs is announced."""
    import _imp

    from ._announce import standing_in

    original = _imp.create_dynamic

    def create_dynamic(spec: ModuleSpec, *rest: object) -> ModuleType:
        _announced_here(enforcement_here(), getattr(spec, "origin", None))
        return original(spec, *rest)

    _imp.create_dynamic = standing_in(original, create_dynamic)
