"""`%%natural` cells and `%nighthawk` under a `nighthawk.scope(...)`: a cell sees the scope in force as a
natural function does, and the status says what the scope adds."""

from __future__ import annotations

from typing import Any

from kernel_scripts import outcome, scripted

import nighthawk as nh
import nighthawk_ipython


def lookup(query: str) -> str:
    """Find one document about `query`."""
    return f"doc about {query}"


def test_a_cell_can_use_the_implicit_references_of_the_scope_in_force(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("return", return_expression="lookup('tides')")]))
    with nh.scope(implicit_references={"lookup": lookup}):
        assert shell.run_cell_magic("natural", "", "Look up tides and return what you find.") == "doc about tides"
    assert "lookup" not in shell.user_ns


def test_status_lists_the_implicit_references_and_fragments_of_the_scope(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    with nh.scope(implicit_references={"lookup": lookup}, user_prompt_suffix_fragments=["Answer in French."]):
        status = nighthawk_ipython.configure(shell=shell).describe()
    assert "scope:   implicit references lookup" in status
    assert "scope:   user prompt + 'Answer in French.'" in status


def test_status_outside_a_scope_has_no_scope_line(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    assert "scope:" not in nighthawk_ipython.configure(shell=shell).describe()
