"""What a `%%natural` cell shows the model of a real notebook: the names the program mentions, the user's
data, the notebook's own functions, and the imports in one line (core/nighthawk/prompting/_namespace.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from data_notebook import DATA, IMPORTS, MORE, first_request, locals_of, names_of, prompt_section
from nighthawk.prompting._tokens import estimate_tokens

pytest.importorskip("pandas")

SUM_BY_REGION = "Add up the amount of <sales> per region and store the totals in <:totals>."


@pytest.fixture
def notebook(empty_notebook: Any) -> Any:
    """The data notebook with the usual import cell above it."""
    empty_notebook.run_cell(IMPORTS)
    empty_notebook.run_cell(DATA)
    return empty_notebook


def test_45_imported_names_take_one_line_grouped_by_module(notebook: Any) -> None:
    lines = locals_of(notebook, SUM_BY_REGION)
    (imported,) = [line for line in lines if line.startswith("imported: ")]
    assert "collections (ChainMap, Counter, OrderedDict, …)" in imported
    assert "pandas as pd" in imported and "numpy as np" in imported
    assert "math (ceil, exp, floor, …)" in imported  # `pi` and `inf` went with them: they are the library's
    for name in ("Counter", "dumps", "partial", "Optional", "Path", "pi", "chain"):
        assert name not in names_of(lines)


def test_the_import_cell_adds_little_to_what_the_model_reads(empty_notebook: Any) -> None:
    shell = empty_notebook
    shell.run_cell(DATA)
    _, plain = first_request(shell, SUM_BY_REGION, "--display none")
    shell.run_cell(IMPORTS)
    _, imported = first_request(shell, SUM_BY_REGION, "--display none")
    # The 45 names are one `imported:` line, its modules listed and three names of each other source.
    assert estimate_tokens(prompt_section(imported, "LOCALS")) - estimate_tokens(prompt_section(plain, "LOCALS")) <= 100


def test_the_names_the_cell_names_come_first_then_the_others_then_the_imports(notebook: Any) -> None:
    lines = locals_of(notebook, "Use `share` to turn <by_region> into fractions of the total in <:shares>; Counter may help.")
    assert names_of(lines[:2]) == ["by_region", "share"]  # the bindings, then the names written as code
    assert lines[1].startswith("share: (part: float, whole: float) -> float")
    assert set(names_of(lines[2:-1])) == {"config", "grid", "notes", "rng", "sales", "target", "Target"}
    assert lines[-1].startswith("imported: ")
    assert "Counter" not in names_of(lines)  # a plain word pins only the user's own names


def test_mentioned_names_survive_any_limit_and_the_cut_is_counted(empty_notebook: Any) -> None:
    shell = empty_notebook
    for cell in (IMPORTS, DATA, MORE):
        shell.run_cell(cell)
    shell.run_line_magic("nighthawk", "limits locals_max_items=4 locals_max_tokens=40")
    lines = locals_of(shell, "Add <year_total> to the sum of amount in zsales and store it in <:result>.")
    assert names_of(lines[:2]) == ["year_total", "zsales"]  # the DataFrame alone is over the token limit
    assert lines[2].startswith("<snipped> ") and "nh_eval can list them" in lines[2]
    assert lines[3].startswith("imported: ")


def test_notebook_functions_the_cell_names_with_one_signature_are_told_apart(notebook: Any) -> None:
    notebook.run_cell("def add(a: int, b: int) -> int:\n    return a + b\n\ndef mul(a: int, b: int) -> int:\n    return a * b\n")
    lines = locals_of(notebook, "Use add or mul on <sales> to fill <:totals>.")
    assert "add: (a: int, b: int) -> int  # disambiguation: use add" in lines
    assert "mul: (a: int, b: int) -> int  # disambiguation: use mul" in lines


def test_a_module_the_program_names_keeps_its_place_on_the_imports_line(notebook: Any) -> None:
    _, user = first_request(notebook, "Using np and <pd>, read the totals of <sales> into <:totals>.", "--display none")
    lines = prompt_section(user, "LOCALS").splitlines()
    assert "pd" not in names_of(lines) and "np" not in names_of(lines)
    (imported,) = [line for line in lines if line.startswith("imported: ")]
    assert "pandas as pd" in imported and "numpy as np" in imported
    assert "<<<NH:GLOBALS>>>" not in user  # nothing to list there: no empty section either


def test_a_name_mentioned_only_in_the_text_survives_the_item_limit(empty_notebook: Any) -> None:
    shell = empty_notebook
    for cell in (IMPORTS, DATA, MORE):
        shell.run_cell(cell)
    assert len([name for name in shell.user_ns if not name.startswith("_")]) >= 95
    lines = locals_of(shell, "Add <year_total> to the sum of amount in zsales and store it in <:result>.")
    assert "zsales" in names_of(lines)
    assert len(lines) <= 80


def test_ipython_history_and_helpers_never_appear(notebook: Any) -> None:
    notebook.run_cell("1 + 1", store_history=True)
    notebook.run_cell("len(notes)", store_history=True)
    assert "_" in notebook.user_ns and "Out" in notebook.user_ns
    lines = locals_of(notebook, "Show In and Out, exit and quit, and _ beside <notes>.")
    shown = set(names_of(lines))
    assert not shown & {"In", "Out", "_", "__", "___", "_ih", "_oh", "_dh", "get_ipython", "exit", "quit", "open"}
    assert not any(re.fullmatch(r"_i*\d*", name) for name in shown)


