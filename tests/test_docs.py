"""Every ```python example in README.md and docs/ runs (```python no-run blocks are only compiled)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^```python( no-run)?\n(.*?)^```", re.MULTILINE | re.DOTALL)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(page: Path) -> list[tuple[bool, str]]:
    return [(bool(no_run), code) for no_run, code in _FENCE.findall(page.read_text())]


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.name)
def test_documentation_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # Examples are written to files so natural functions in them have inspectable source.
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    for index, (no_run, code) in enumerate(_blocks(page)):
        source = tmp_path / f"{page.stem}_{index}.py"
        source.write_text(code)
        compiled = compile(code, str(source), "exec")
        if not no_run:
            exec(compiled, namespace)
