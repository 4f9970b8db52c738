"""Which notebook names enter step locals (nighthawk_ipython/_namespace.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nighthawk.program.block import parse_program
from nighthawk_ipython._namespace import notebook_locals, resolve_reads


def names(shell: Any, program: str = "Do nothing.") -> list[str]:
    return list(notebook_locals(shell.user_ns, shell.user_ns_hidden, parse_program(program)))


def test_user_variables_enter_step_locals(shell: Any) -> None:
    shell.run_cell("alpha = 1\nbeta = 'two'")
    assert {"alpha", "beta"} <= set(names(shell))


@pytest.mark.parametrize("name", ["In", "Out", "_", "__", "___", "_i", "_ii", "_iii", "_oh", "_ih", "_dh", "exit", "quit", "get_ipython"])
def test_ipython_bookkeeping_stays_out(shell: Any, name: str) -> None:
    assert name not in names(shell)


def test_numbered_history_stays_out(shell: Any) -> None:
    shell.run_cell("1 + 1", store_history=True)
    count = shell.execution_count - 1
    assert not {f"_{count}", f"_i{count}"} & set(names(shell))


def test_hidden_namespace_entries_stay_out(shell: Any) -> None:
    assert "open" in shell.user_ns_hidden
    assert "open" not in names(shell)


def test_rebinding_a_hidden_name_brings_it_in(shell: Any) -> None:
    shell.user_ns["open"] = "door"
    assert "open" in names(shell)


def test_modules_and_dunder_names_stay_out(shell: Any) -> None:
    shell.run_cell("import json")
    assert shell.user_ns["json"] is json
    assert not {"json", "__name__", "__builtins__"} & set(names(shell))


def test_bound_names_come_first(shell: Any) -> None:
    shell.run_cell("early = 1\nlate = 2")
    assert names(shell, "Use <late> and set <:early>.")[:2] == ["late", "early"]


def test_read_binding_prefers_the_notebook_over_builtins(shell: Any) -> None:
    shell.user_ns["len"] = "shadowed"
    assert resolve_reads(shell.user_ns, parse_program("<len>")) == {"len": "shadowed"}


def test_unresolved_read_binding_raises_name_error_like_python() -> None:
    with pytest.raises(NameError, match=r"^name 'ghost' is not defined; if `<ghost>` in the Natural block is text") as caught:
        resolve_reads({}, parse_program("<ghost>"))
    assert caught.value.name == "ghost"
