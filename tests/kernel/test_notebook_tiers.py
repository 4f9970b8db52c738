"""What a `%%natural` cell shows of a real notebook, in two tiers: the names the cell names in full, every other
name of the user's in one short line, and the imports (core/nighthawk/prompting/_namespace.py and the modules
it uses: _mentions.py, _explorer.py, _imports.py, _tables.py)."""

from __future__ import annotations

from typing import Any

import pytest
from data_notebook import locals_of, names_of

pytest.importorskip("pandas")

SALES = """\
import numpy as np
import pandas as pd
rng = np.random.default_rng(7)
n = 5000
sales = pd.DataFrame({
    "date": pd.date_range("2023-01-01", periods=n, freq="h"),
    "region": rng.choice(["north", "south", "east", "west"], n),
    "product": rng.choice(["widget", "gadget", "gizmo"], n),
    "units": rng.integers(1, 50, n),
    "price": rng.uniform(1, 100, n).round(2),
    "customer": rng.choice(["acme", "globex", "initech"], n),
    "channel": pd.Categorical(rng.choice(["web", "store"], n)),
    "revenue": rng.uniform(10, 5000, n).round(2),
})
"""


def test_a_named_5000_by_8_dataframe_shows_every_column_and_values_of_each(empty_notebook: Any) -> None:
    empty_notebook.run_cell(SALES)
    (line,) = [line for line in locals_of(empty_notebook, "Total the revenue of <sales> per region into <:totals>.") if line.startswith("sales:")]
    assert '"shape":[5000,8]' in line
    for column, shown in [
        ("date", "2023-01-01"),
        ("region", "north"),
        ("product", "gizmo"),
        ("units", "1..49"),
        ("price", ".."),
        ("customer", "initech"),
        ("channel", "levels: store, web"),
        ("revenue", ".."),
    ]:
        start = line.index(f'"{column}":"')
        assert shown in line[start : line.index('"', start + len(column) + 4)], column


def test_a_star_import_is_one_line_naming_numpy_and_the_builtins_it_shadows(empty_notebook: Any) -> None:
    empty_notebook.run_cell("from numpy import *\nspeeds = [3, 9, 4]")
    lines = locals_of(empty_notebook, "Store the largest of <speeds> in <:fastest>.")
    shadowing = [line for line in lines if line.startswith("from numpy import *")]
    assert shadowing and all(name in shadowing[0] for name in ("max", "min", "sum", "round", "any", "all"))
    # Its 500 names are not the user's: neither listed nor counted; nor are its submodules.
    assert not any(line.startswith("<snipped>") for line in lines)
    assert not {"take", "linalg", "random", "e", "pi"} & set(names_of(lines))


def test_take_the_max_of_all_speeds_pins_no_numpy_function(empty_notebook: Any) -> None:
    empty_notebook.run_cell("from numpy import *\nspeeds = [3, 9, 4]")
    lines = locals_of(empty_notebook, "Take the max of all speeds and store it in <:fastest>.")
    assert names_of(lines[:1]) == ["speeds"]
    assert not {"take", "max", "all"} & set(names_of(lines))


def test_a_library_function_written_as_code_is_pinned(empty_notebook: Any) -> None:
    empty_notebook.run_cell("from numpy import *\nspeeds = [3, 9, 4]")
    lines = locals_of(empty_notebook, "Use `take` on speeds, then where( it is over 5, into <:fast>.")
    assert {"take", "where", "speeds"} <= set(names_of(lines))


def test_contractions_and_abbreviations_pin_nothing(empty_notebook: Any) -> None:
    empty_notebook.run_cell("i = 3\ns = 'x'\ne = 2.5\ng = 1\nmanager = {'name': 'Ada'}")
    lines = locals_of(empty_notebook, "Put the manager's name, i.e. the boss, e.g. Ada, in <:boss>.")
    assert names_of(lines[:1]) == ["manager"]
    assert lines[1].startswith("g: int = 1")  # the others one short line each
    assert not any(line.startswith(("i: int = 3 ", "s: str = 'x' ")) for line in lines)


def test_a_name_in_quotes_is_pinned(empty_notebook: Any) -> None:
    empty_notebook.run_cell("sales = {'north': 3}\nscratch = [1, 2]")
    lines = locals_of(empty_notebook, "Plot 'north' from the 'sales' table into <:chart>.")
    assert names_of(lines[:1]) == ["sales"]


def test_unmentioned_scratch_is_one_line_each_most_recent_first(empty_notebook: Any) -> None:
    shell = empty_notebook
    shell.run_cell(SALES, store_history=True)
    shell.run_cell("tmp = sales.head(100)\npreds = list(range(2000))", store_history=True)
    shell.run_cell("i = 7\nnote = 'checked the west region'", store_history=True)
    shell.run_cell("tmp = sales.tail(50)", store_history=True)
    lines = locals_of(shell, "Total the revenue of <sales> per region into <:totals>.")
    assert names_of(lines) == ["sales", "tmp", "note", "i", "preds", "n", "rng", "imported"]
    assert lines[1:6] == [
        "tmp: DataFrame 50×8",
        "note: str = 'checked the west region'",
        "i: int = 7",
        "preds: list of 2000",
        "n: int = 5000",
    ]


def test_a_compiled_regex_and_a_list_of_words_under_token_names_are_shown(empty_notebook: Any) -> None:
    empty_notebook.run_cell("import re\ntoken_re = re.compile(r'[a-z]+')\ntoken_list = ['the', 'a', 'of', 'and', 'to']")
    lines = locals_of(empty_notebook, "Split the text with <token_re>, dropping the words of <token_list>, into <:words>.")
    shown = "\n".join(lines)
    assert "[a-z]+" in shown and '"the"' in shown
    assert "<masked>" not in shown


def test_a_key_in_a_list_under_a_token_name_is_still_masked(empty_notebook: Any) -> None:
    empty_notebook.run_cell("token_list = ['sk-live-9fQ2xLmP7rTz4WkV8bN3cY6hJ1dS5gA0']")
    lines = locals_of(empty_notebook, "Count <token_list> into <:count>.")
    assert "9fQ2xLmP7rTz4WkV8bN3cY6hJ1dS5gA0" not in "\n".join(lines)
    assert "<masked>" in "\n".join(lines)


def test_a_natural_function_in_the_namespace_shows_its_programs_first_line(empty_notebook: Any) -> None:
    empty_notebook.run_cell(
        "import nighthawk\n"
        "@nighthawk.natural_function\n"
        "def tidy(text: str) -> str:\n"
        "    '''natural\n"
        "    Trim <text> and fix its capitals, then return it.\n"
        "    '''\n"
        "    return text\n"
    )
    lines = locals_of(empty_notebook, "Store 1 in <:x>.")
    (line,) = [line for line in lines if line.startswith("tidy:")]
    assert "Trim <text> and fix its capitals" in line
    assert "natural" not in line
