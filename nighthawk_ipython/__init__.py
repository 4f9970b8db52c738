"""The Nighthawk kernel extension: `%%natural` cells, the `%nighthawk` settings magic and step widgets.

Load it with `%load_ext nighthawk` (or `%load_ext nighthawk_ipython`). Loading registers the magics lazily
and imports neither pydantic-ai nor ipywidgets; they are imported on first use. The public names below
are imported on first access too (PEP 562), so `import nighthawk_ipython` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._display import StepView
    from ._extension import configure
    from ._magics import NighthawkMagics
    from ._settings import NighthawkSettings
    from ._widgets import StepWidget

__all__ = [
    "NighthawkMagics",
    "NighthawkSettings",
    "StepView",
    "StepWidget",
    "configure",
    "load_ipython_extension",
    "unload_ipython_extension",
]

# Public name -> private module defining it, for `__getattr__` (checked by tests/kernel/test_exports.py).
_LAZY_EXPORTS: dict[str, str] = {
    "NighthawkMagics": "._magics",
    "NighthawkSettings": "._settings",
    "StepView": "._display",
    "StepWidget": "._widgets",
    "configure": "._extension",
}


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext nighthawk_ipython`: register the settings, the magics (lazily) and the step display."""
    from ._extension import load  # here, not at the top: `import nighthawk_ipython` stays cheap

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext nighthawk_ipython`: remove the magics, the settings and the step display."""
    from ._extension import unload  # here, not at the top: `import nighthawk_ipython` stays cheap

    unload(ipython)


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nighthawk_ipython' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
