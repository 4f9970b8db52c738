"""What the extension keeps for one shell (`KernelState`), and the hooks that keep it in step with the core.

The state gets ready (the kernel's executor installed as the default one, the step displayer listening, so
natural functions called from plain cells are displayed like `%%natural` cells) the first time the process
runs something: a `%%natural` cell, or the core's first run, scope, block or map (`nighthawk._first_use`),
so that `%load_ext` only registers. From then on the hooks keep it ready at every cell, and bound every cell
by the cell budget when one is set. Both the loader (`_extension`) and the magics (`_magics`) reach the state
through `state_for`.

This module is imported by `%load_ext`, so it imports the core and the displayer (`_live`, which imports the
core) inside the functions that need them: `%load_ext nighthawk_ipython` leaves the core unimported (the
hooks check `sys.modules` for it).
"""

from __future__ import annotations

import sys
import weakref
from contextlib import AbstractContextManager, ExitStack, nullcontext
from typing import Any

from ._settings import settings_for

__all__ = ["KernelState", "forget_state", "state_for"]

_states: weakref.WeakKeyDictionary[Any, KernelState] = weakref.WeakKeyDictionary()


_SAVED_SETTINGS = "_nighthawk_settings"
"""Shell attribute holding the settings of the last unload, so a later load starts from them."""


class KernelState:
    """What the extension keeps for one shell: its settings and its step displayer."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.settings = settings_for(shell)
        # `%reload_ext`, `%unload_ext` + autoload and a repeated `%load_ext` must not fall back to the default
        # model: that would send a kernel running on a replay store or a scripted model to a live provider.
        # The values live on the shell, which outlives any reload of this module.
        saved = getattr(shell, _SAVED_SETTINGS, None)
        if saved:
            self.settings.restore(saved)
        self.displayer: Any = None
        """The `StepDisplayer` listening to the event stream, once the core is imported."""
        self._cell_budget = ExitStack()

    def prepare_on_first_use(self) -> None:
        """Get ready when the core first runs something, not now (once the core is imported; idempotent)."""
        if "nighthawk" not in sys.modules:  # `%load_ext nighthawk_ipython`: the cell hook asks again later
            return
        from nighthawk._first_use import prepare_on_first_use  # the core is imported (checked above)

        prepare_on_first_use(self.ready)

    def ready(self) -> None:
        """Install the kernel's executor (unless one is in force) and start displaying steps."""
        self.settings.ensure_installed()
        if self.displayer is None:
            # Here, not at the top: the core and the displayer wait for the first step (module docstring).
            from nighthawk._listeners import add_process_listener

            from ._live import StepDisplayer

            from nighthawk.road._map_renderers import use_renderer  # not `nighthawk.batch`: no map machinery yet

            from ._shell_state import ShellStateKeeper

            self.displayer = StepDisplayer(lambda: self.settings.display)
            add_process_listener(self.displayer)
            add_process_listener(ShellStateKeeper(self.shell))
            use_renderer(self.map_renderer)
        _guard_exit(self.shell)

    def map_renderer(self, total: int | None, usage: Any, progress: bool | None) -> Any:
        """Show a `nighthawk.map` in the notebook, hiding its items' steps; `None` (the map's progress is then
        the stderr line) in terminal IPython. In display mode `none` a map shows nothing (a kernel would save
        each redraw of the stderr line as an output), or only its text summary when given `progress=True`."""
        from ._live import _comms_live

        if self.displayer is None or not _comms_live():
            return None
        from IPython.display import display

        from ._mapview import MapView

        mode = self.settings.display
        if mode == "none" and progress is True:
            mode = "text"
        shown = mode if progress is not False else "none"
        return MapView(total, usage, mode=shown, show=display, live=shown == "widget", mute=self.displayer.mute)

    def display_mode(self, mode: str | None) -> AbstractContextManager[None]:
        """Show the steps run inside the `with` block in `mode` (`None`: the kernel setting)."""
        if mode is None:
            return nullcontext()
        from ._live import display_mode_override  # imports the core: only once a cell asks for a mode

        return display_mode_override(mode)

    def pre_run_cell(self, info: Any = None) -> None:
        """IPython hook: once ready, stay ready (a change of settings or a user's executor since the last
        cell); before that, wait for the core's first use; and open the cell's budget when one is set."""
        if "nighthawk" not in sys.modules:
            return
        if self.displayer is not None:
            self.ready()
        else:
            self.prepare_on_first_use()
        bound = self.settings.cell_budget() if info is not None else None
        if bound is not None:
            from nighthawk.budget import budget  # the core is imported (checked above); a lookup, not a load

            # Every step the cell starts counts against it: `%%natural`, natural functions, loops of them.
            self._cell_budget.enter_context(budget(bound))

    def post_run_cell(self, result: Any = None) -> None:
        """IPython hook: close the cell's budget."""
        try:
            self._cell_budget.close()
        except ValueError:  # the cell's code ran in another context than the hook; the scope ends anyway
            self._cell_budget = ExitStack()

    def close(self) -> None:
        """Keep the settings on the shell for the next load, stop listening and give the default executor back."""
        setattr(self.shell, _SAVED_SETTINGS, self.settings.snapshot())
        if "nighthawk" in sys.modules:
            from nighthawk._first_use import forget_preparation  # imported with the core, a lookup only

            forget_preparation(self.ready)
        if self.displayer is not None:
            from nighthawk._listeners import remove_process_listener  # imported with the displayer, a lookup only

            from nighthawk.road._map_renderers import use_renderer

            remove_process_listener(self.displayer)
            self.displayer = None
            previous = use_renderer(None)
            if previous != self.map_renderer:  # another shell's: leave it
                use_renderer(previous)
        _unguard_exit(self.shell)
        self.settings.uninstall()
        if self.settings.confirm:  # kept in the snapshot: the next load turns it on again
            from ._confirm import use_confirm  # imported when confirm mode was turned on

            use_confirm(False)


def _guard_exit(shell: Any) -> None:
    """Make `exit()` and `quit()` called by code a step evaluates end that step, not the kernel.

    IPython's `exit` does not raise `SystemExit`: it asks the shell to stop (`ask_exit`), and a kernel then
    shuts down once the cell ends, losing the notebook's state. Raised inside a step instead, `SystemExit`
    ends the step with `StepAbortedError` like `sys.exit()` does. Elsewhere `exit()` works as always.
    """
    # A bare `InteractiveShell` has no way out to guard; terminal and kernel shells do.
    if not hasattr(shell, "ask_exit") or getattr(shell.ask_exit, "_nighthawk_guard", False):
        return
    from nighthawk.threads._loop import running_user_code  # called from `ready`: the core is imported by then

    ask_exit = shell.ask_exit

    def guarded_ask_exit() -> None:
        if running_user_code():
            raise SystemExit("exit() called by code a step evaluated")
        ask_exit()

    guarded_ask_exit._nighthawk_guard = True  # type: ignore[attr-defined]
    # What to put back on unload: another instance attribute, or nothing (the class's method shows again).
    guarded_ask_exit._nighthawk_replaced = vars(shell).get("ask_exit")  # type: ignore[attr-defined]
    shell.ask_exit = guarded_ask_exit


def _unguard_exit(shell: Any) -> None:
    guard = vars(shell).get("ask_exit")
    if not getattr(guard, "_nighthawk_guard", False):
        return
    if guard._nighthawk_replaced is None:
        del shell.ask_exit
    else:
        shell.ask_exit = guard._nighthawk_replaced


def state_for(shell: Any) -> KernelState:
    """The extension state of `shell`, created on first use."""
    state = _states.get(shell)
    if state is None:
        state = _states[shell] = KernelState(shell)
    return state


def forget_state(shell: Any) -> KernelState | None:
    """Drop the extension state of `shell` (on unload) and return it, or `None` when it had none."""
    return _states.pop(shell, None)
