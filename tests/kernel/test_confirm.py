"""Confirm mode in a live kernel: `%nighthawk confirm on` and `%%natural --confirm` show each tool call and
wait for the person's answer on the kernel's input prompt, as JupyterLab, VS Code or the terminal ask it.

The frontend here is jupyter_client with input allowed, answering each prompt as a person would; a cell run
without input (as nbclient and nbval run notebooks) must stop with a message instead of waiting.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_client")

from live import BASE_SETUP, Live, live_kernel  # noqa: E402

SETUP = BASE_SETUP + 'total = "before"\n'
PROMPT = "Run it? [y/N] "


class Person:
    """Answers the prompts in order (`None`: presses Interrupt instead) and remembers what was asked."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str | None:
        self.prompts.append(prompt)
        return self.answers.pop(0)


@pytest.fixture(scope="module")
def kernel() -> Iterator[Live]:
    with live_kernel(SETUP) as started:
        yield started


@pytest.fixture
def live(kernel: Live) -> Iterator[Live]:
    kernel.ok('total = "before"')
    yield kernel
    kernel.ok("%nighthawk confirm off")


def test_confirm_on_shows_the_call_and_runs_it_after_yes(live: Live) -> None:
    live.ok("%nighthawk confirm on")
    person = Person("y")
    cell = live.run("%%natural\nASSIGN total = 40 + 2\nSet <:total>.", answer=person)
    assert cell.status == "ok", cell.error_text
    assert person.prompts == [PROMPT]
    assert "nh_assign:\n    total = 40 + 2" in cell.printed
    assert live.ok("total").result == "42"


def test_answer_no_refuses_the_call_and_nothing_changes(live: Live) -> None:
    live.ok("%nighthawk confirm on")
    cell = live.run("%%natural\nASSIGN total = 40 + 2\nSet <:total>.", answer=Person("n"))
    assert cell.status == "ok", cell.error_text
    assert live.ok("total").result == "'before'"


def test_no_answer_refuses_the_call(live: Live) -> None:
    live.ok("%nighthawk confirm on")
    live.run("%%natural\nASSIGN total = 40 + 2\nSet <:total>.", answer=Person(""))
    assert live.ok("total").result == "'before'"


def test_the_model_reads_the_refusal_and_what_the_person_typed(live: Live) -> None:
    live.ok("%nighthawk confirm on")
    cell = live.run("%%natural\nEVAL sorted(globals())[:1]", answer=Person("not now, use the cache"))
    assert '"kind": "execution"' in (cell.result or "")
    assert "the user did not allow this call and said: not now, use the cache" in (cell.result or "")


def test_interrupt_while_waiting_stops_the_cell_and_changes_nothing(live: Live) -> None:
    live.ok("%nighthawk confirm on")
    cell = live.run("%%natural\nASSIGN total = 40 + 2\nSet <:total>.", answer=Person(None), timeout=30)
    assert cell.ename == "KeyboardInterrupt"
    assert live.ok("total").result == "'before'"
    assert live.run("%%natural\nASSIGN total = 1\nSet <:total>.", answer=Person("yes")).status == "ok"
    assert live.ok("total").result == "1"


def test_confirm_off_asks_nothing(live: Live) -> None:
    live.ok("%nighthawk confirm on")
    live.ok("%nighthawk confirm off")
    live.ok("%%natural\nASSIGN total = 3\nSet <:total>.")  # input not allowed: a prompt would fail the cell
    assert live.ok("total").result == "3"


def test_natural_confirm_asks_for_that_cell_only(live: Live) -> None:
    person = Person("y")
    live.run("%%natural --confirm\nASSIGN total = 5\nSet <:total>.", answer=person)
    assert person.prompts == [PROMPT]
    live.ok("%%natural\nASSIGN total = 6\nSet <:total>.")
    assert live.ok("total").result == "6"


def test_confirm_mode_asks_for_natural_functions_called_from_plain_cells(live: Live) -> None:
    live.ok('@nighthawk.natural_function\ndef peek() -> str:\n    """natural\n    EVAL 6 * 7\n    """\n')
    live.ok("%nighthawk confirm on")
    person = Person("y")
    cell = live.run("result = peek()", answer=person)
    assert person.prompts == [PROMPT]
    assert "6 * 7" in cell.printed


def test_confirm_mode_without_stdin_stops_the_step_with_a_message(live: Live) -> None:
    live.ok("%nighthawk confirm on")
    cell = live.run("%%natural\nASSIGN total = 40 + 2\nSet <:total>.")  # no input allowed, as under nbclient
    assert cell.ename == "OversightRejectedError"
    assert "this frontend does not answer input requests" in cell.error_text
    assert "`%nighthawk confirm off`" in cell.error_text
    assert live.ok("total").result == "'before'"


def test_status_says_whether_confirm_is_on(live: Live) -> None:
    live.ok("%nighthawk confirm on")
    assert "confirm: on" in live.ok("%nighthawk status").printed


def test_confirm_stays_on_after_reload_ext(live: Live) -> None:
    live.ok("%nighthawk confirm on")
    live.ok("%reload_ext nighthawk")
    person = Person("y")
    live.run("%%natural\nASSIGN total = 7\nSet <:total>.", answer=person)
    assert person.prompts == [PROMPT]


def test_confirm_takes_on_or_off(shell: Any) -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match=r"%nighthawk confirm: 'maybe' is neither on nor off"):
        shell.run_line_magic("nighthawk", "confirm maybe")


@pytest.fixture
def refused_display(shell: Any, use_model: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The display of a `%%natural --confirm` cell whose one call the person refused (no answer)."""
    from IPython.utils.capture import capture_output
    from kernel_scripts import assign, outcome, scripted

    monkeypatch.setattr("builtins.input", lambda prompt="": "")
    use_model(scripted([assign("total", "40 + 2")], [outcome("pass")]))
    with capture_output() as captured:
        shell.run_cell("%%natural --confirm\nSet <:total>.")
    (display,) = captured.outputs
    return display.data


def test_the_step_text_lists_the_refused_call(refused_display: Any) -> None:
    assert "oversight: confirm rejected nh_assign (the user did not allow this call)" in refused_display["text/plain"]


def test_the_step_html_lists_the_refused_call(refused_display: Any) -> None:
    assert '<div class="nh-oversight">oversight: confirm rejected nh_assign' in refused_display["text/html"]


def test_a_notebook_run_by_nbclient_in_confirm_mode_fails_with_the_message_instead_of_waiting() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    here = Path(__file__).resolve().parent
    paths = [str(here.parents[1] / "core"), str(here.parents[1]), str(here), *filter(None, [os.environ.get("PYTHONPATH")])]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell("%nighthawk confirm on\n"),
                      nbformat.v4.new_code_cell("%%natural\nASSIGN total = 40 + 2\nSet <:total>.")]
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3")
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="this frontend does not answer input requests"):
        client.execute(env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})


@pytest.fixture
def victim(live: Live, tmp_path: Path) -> Path:
    path = tmp_path / "keep.txt"
    path.write_text("precious")
    live.ok(f"import os\np = {str(path)!r}")
    return path


def test_confirm_asks_before_a_return_expression_and_no_keeps_the_file(live: Live, victim: Path) -> None:
    person = Person("n")
    cell = live.run("%%natural --confirm\nRETURN os.remove(p)", answer=person)
    assert person.prompts == [PROMPT]
    assert "nh_outcome:\n    return os.remove(p)" in cell.printed
    assert cell.ename == "OversightRejectedError"
    assert "confirm rejected the return expression 'os.remove(p)'" in cell.error_text
    assert victim.read_text() == "precious"


def test_confirm_mode_asks_before_a_natural_functions_return_expression(live: Live, victim: Path) -> None:
    live.ok('@nighthawk.natural_function\ndef tidy(p: str):\n    """natural\n    RETURN os.remove(p)\n    """\n')
    live.ok("%nighthawk confirm on")
    person = Person("n")
    cell = live.run("tidy(p)", answer=person)
    assert person.prompts == [PROMPT]
    assert cell.ename == "OversightRejectedError"
    assert victim.read_text() == "precious"


def test_confirm_does_not_ask_before_a_literal_return_expression(live: Live) -> None:
    # Evaluating a literal runs no code; asking would only be noise.
    assert live.ok("%%natural --confirm\nRETURN 'back'").result == "'back'"  # input not allowed: a prompt would fail
