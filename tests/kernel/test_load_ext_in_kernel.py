"""`%load_ext nighthawk` in a real kernel, as users start one: ipykernel and ipywidgets installed and the
startup file an install puts in place (which declares the magics against the extension). Loading registers
the magics and settings only; what a step needs loads with the first one. Nothing here is timed
(bench/bench_startup.py measures in kernels too).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("jupyter_client")
pytest.importorskip("ipywidgets")

from live import Live, autoloading_ipython_dir, live_kernel  # noqa: E402

STEP_ONLY = (
    "nighthawk.road.runtime",  # the core's face names load on first use (only the budgets with the package)
    "nighthawk.step._context",
    "nighthawk.configuration",
    "nighthawk.road.decorator",
    "nighthawk.secrets",
    "nighthawk.agents",
    "nighthawk.step._validation",
    "nighthawk.events",  # the event classes
    "nighthawk.road.runner",  # the road of a step and what it brings
    "nighthawk.threads._deadline",
    "nighthawk.threads._loop",
    "nighthawk.step._tool_registry",
    "nighthawk.step._outcome_schema",
    "nighthawk.step._evaluate",
    "nighthawk.oversight",
    "nighthawk.oversight._kinds",
    "nighthawk.oversight._oversee",
    "nighthawk.oversight._policies",
    "nighthawk.secrets._scrubber",
    "nighthawk.secrets._values",
    "nighthawk.model.executor",  # the kernel's executor, built when the first step asks for it
    "nighthawk.model._step_agent",
    "nighthawk.model._prompt",  # the prompt and value rendering
    "nighthawk.prompting._render",
    "nighthawk.batch",
    "nighthawk_ipython._magics",  # the magics' code, imported when one is first used
    "nighthawk_ipython._live",  # the step displayer and its records
    "nighthawk_ipython._records",
    "nighthawk_ipython._display",
    "nighthawk_ipython._confirm",
    "nighthawk_ipython._text",
    "concurrent.futures.thread",
    "pydantic",
    "pydantic_ai",
)

SETUP = "import sys\n_before = set(sys.modules)"

LOAD = (
    "%load_ext nighthawk\n"
    f"print(' '.join(m for m in {STEP_ONLY!r} if m in sys.modules and m not in _before))"
)

TRIPLE = '''
import nighthawk, nighthawk_ipython
from live_models import directed
nighthawk_ipython.configure(model=directed, display="text")

@nighthawk.natural_function
def triple(x):
    """natural
    RETURN x * 3
    """

triple(5)
'''


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with autoloading_ipython_dir() as env, live_kernel(SETUP, env=env) as kernel:
        yield kernel


@pytest.fixture(scope="module")
def loaded(live: Live) -> list[str]:
    """What of `STEP_ONLY` the kernel's first `%load_ext nighthawk` imported."""
    return live.ok(LOAD).printed.split()


def test_load_ext_leaves_out_what_only_a_step_needs(loaded: list[str]) -> None:
    assert loaded == []


def test_the_magics_are_listed_after_load_ext(loaded: list[str], live: Live) -> None:
    table = live.ok("t = get_ipython().magics_manager.lsmagic(); 'natural' in t['cell'], 'nighthawk' in t['line']")
    assert table.result == "(True, True)"


def test_a_natural_function_in_the_first_cell_after_load_ext_runs_and_is_displayed(loaded: list[str], live: Live) -> None:
    cell = live.ok(TRIPLE)
    assert cell.result == "15"
    assert "outcome: return x * 3 -> 15" in cell.displayed


def test_after_unload_ext_the_next_magic_loads_the_extension_again(loaded: list[str], live: Live) -> None:
    # `%load_ext` replaced the startup file's declaration with its own; unloading puts the startup file's back.
    live.ok("%unload_ext nighthawk")
    live.ok("%nighthawk display text")  # fails with "Line magic function `%nighthawk` not found" otherwise
    assert live.ok("'nighthawk' in get_ipython().extension_manager.loaded").result == "True"
