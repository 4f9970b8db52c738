"""`%nighthawk code [STEP]`: the Python a step ran, put in the next cell.

The code itself is made by the core (`nighthawk.transcript._as_python`) from the step's record, the one its display was
built from (`_records.StepRecord.as_python`; in display mode `none` the record is kept, not shown); this
module only finds the step, or says which there are, and hands the code to IPython.
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
    if key is None and displayer is not None and displayer.map_ran_last:
        raise UsageError(
            "%nighthawk code: the last steps ran in a `nighthawk.map`, which keeps none of its items' steps; "
            f"{_listing(displayer) or 'no other step is kept'}"
        )
    step = None if displayer is None else displayer.find_step(key)
    if step is None:
        raise UsageError(_missing(displayer, key))
    code = step.as_python()
    shell.set_next_input(code, replace=False)
    if echo:
        print(code, end="")


def _missing(displayer: StepDisplayer | None, key: str | None) -> str:
    listing = None if displayer is None else _listing(displayer)
    if key is None or listing is None:
        return (
            "%nighthawk code: no finished step has been recorded in this kernel yet (a map keeps none of its "
            "items' steps); run a `%%natural` cell or a natural function first"
        )
    return f"%nighthawk code: no recorded step for {key!r}; {listing}"


def _listing(displayer: StepDisplayer) -> str | None:
    """`give one of cells 3, 5; step ids __main__:12`: every step that can be asked for; `None` if none."""
    cells, ids = displayer.known_steps()
    listed = [f"cells {', '.join(map(str, cells))}"] if cells else []
    if ids:
        listed.append(f"step ids {', '.join(ids)}")
    return f"give one of {'; '.join(listed)}" if listed else None
