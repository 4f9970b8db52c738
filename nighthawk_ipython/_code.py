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


def put_step_code(shell: Any, displayer: StepDisplayer | None, key: str | None, *, echo: bool) -> None:
    """Put the code of a step in the next cell (and print it with `echo`).

    Args:
        shell: The shell whose next input receives the code.
        displayer: The kernel's `StepDisplayer` (which keeps the recent steps), or `None` before any step.
        key: A cell's execution count, a step id (`In[3]:2`, `__main__:12`), or `None` for the last step.
        echo: Print the code too.

    Raises:
        UsageError: No step was kept, or none matches `key`.
    """
    step = None if displayer is None else displayer.find_step(key)
    if step is None:
        raise UsageError(_missing(displayer, key))
    code = step.as_python()
    shell.set_next_input(code, replace=False)
    if echo:
        print(code, end="")


def _missing(displayer: StepDisplayer | None, key: str | None) -> str:
    cells, ids = ([], []) if displayer is None else displayer.known_steps()
    if key is None or not (cells or ids):
        return (
            "%nighthawk code: no finished step has been recorded in this kernel yet (a map keeps none of its "
            "items' steps); run a `%%natural` cell or a natural function first"
        )
    listed = [f"cells {', '.join(map(str, cells))}"] if cells else []
    if ids:
        listed.append(f"step ids {', '.join(ids)}")
    return f"%nighthawk code: no recorded step for {key!r}; give one of {'; '.join(listed)}"
