"""`%nighthawk code [STEP]`: the Python a step ran, put in the next cell.

The code itself is made by the core (`nighthawk._as_python`) from the step's record, the one its display was
built from (`_records.StepRecord.as_python`); this module only finds the step and hands the code to IPython.
`set_next_input` adds a cell below in JupyterLab and fills the next prompt in a terminal; a notebook run by
nbclient or nbval has no frontend to take it, hence `--print`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

if TYPE_CHECKING:
    from ._live import StepDisplayer

__all__ = ["put_step_code"]

_SHOWN_KEYS = 8
"""Recent cells and step ids an error names when the one asked for is unknown."""


def put_step_code(shell: Any, displayer: StepDisplayer | None, key: str | None, *, echo: bool, display_mode: str) -> None:
    """Put the code of a step in the next cell (and print it with `echo`).

    Args:
        shell: The shell whose next input receives the code.
        displayer: The kernel's `StepDisplayer` (which keeps the recent steps), or `None` before any step.
        key: A cell's execution count, a step id (`In[3]:2`, `__main__:12`), or `None` for the last step.
        echo: Print the code too.
        display_mode: The kernel's display mode, to explain an empty history.

    Raises:
        UsageError: No step was kept, or none matches `key`.
    """
    step = None if displayer is None else displayer.find_step(key)
    if step is None:
        raise UsageError(_missing(displayer, key, display_mode))
    code = step.as_python()
    shell.set_next_input(code, replace=False)
    if echo:
        print(code, end="")


def _missing(displayer: StepDisplayer | None, key: str | None, display_mode: str) -> str:
    history = None if displayer is None else displayer.history
    known = [] if history is None else history.known()
    if key is None or not known:
        why = "no finished step has been recorded in this kernel yet"
        if display_mode == "none":
            why += " (display mode `none` records no steps: `%nighthawk display text` or `html` does)"
        return f"%nighthawk code: {why}; run a `%%natural` cell or a natural function first"
    shown = ", ".join(known[-_SHOWN_KEYS:])
    return (
        f"%nighthawk code: no recorded step for {key!r}; give a cell's execution count or a step id, one of "
        f"the recent ones: {shown}"
    )
