"""The public surface: `__all__` matches the namespace, and importing nighthawk stays light."""

from __future__ import annotations

import subprocess
import sys
import types

import nighthawk


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(nighthawk).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType) and name != "annotations"
    }
    lazy = nighthawk._BATCH_NAMES | nighthawk._AGENT_SETTINGS | nighthawk._STEP_NAMES.keys() | nighthawk._FACE_NAMES.keys()  # those load on first use
    assert set(nighthawk.__all__) == public | lazy | nighthawk._SUBMODULES


def test_batch_names_load_on_first_use() -> None:
    code = (
        "import sys, nighthawk; before = 'nighthawk.batch' in sys.modules; nighthawk.map; "
        "print(before, 'nighthawk.batch' in sys.modules, nighthawk.map is nighthawk.batch.map)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "True", "True"]


def test_every_exported_name_resolves() -> None:
    for name in nighthawk.__all__:
        assert getattr(nighthawk, name) is not None


def test_import_nighthawk_imports_neither_ipython_nor_pydantic_ai_nor_ray() -> None:
    code = "import sys, nighthawk; print(sorted(m for m in ('IPython', 'pydantic_ai', 'tiktoken', 'yaml', 'ray') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
