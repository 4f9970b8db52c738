"""The public surface of nighthawk_ipython matches `__all__`, and every module declares `__all__`."""

from __future__ import annotations

import importlib
import pkgutil

import nighthawk_ipython


def test_every_public_name_resolves() -> None:
    missing = [name for name in nighthawk_ipython.__all__ if not hasattr(nighthawk_ipython, name)]
    assert missing == []


def test_lazy_export_table_matches_all() -> None:
    eager = {"load_ipython_extension", "unload_ipython_extension"}
    assert set(nighthawk_ipython._LAZY_EXPORTS) | eager == set(nighthawk_ipython.__all__)


def test_every_module_declares_all_and_defines_it() -> None:
    for info in pkgutil.iter_modules(nighthawk_ipython.__path__):
        module = importlib.import_module(f"nighthawk_ipython.{info.name}")
        assert info.name.startswith("_"), info.name
        undefined = [name for name in module.__all__ if not hasattr(module, name)]
        assert undefined == [], info.name


def test_unknown_attribute_raises_attribute_error() -> None:
    try:
        nighthawk_ipython.nothing_here  # noqa: B018
    except AttributeError as exc:
        assert "has no attribute 'nothing_here'" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
