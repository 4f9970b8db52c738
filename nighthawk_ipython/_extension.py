"""Loading and unloading the extension, and the per-shell state it keeps.

Loading only registers what IPython needs to know about: the settings `Configurable`, the magics (lazily,
from `_table.LAZY_MAGICS`) and `pre_run_cell`/`post_run_cell` hooks. The core, pydantic-ai and ipywidgets
are imported when a step first needs them. Once `nighthawk` is imported (always the case after
`%load_ext nighthawk`), the hooks make sure that the kernel's executor is the default one and that the step
displayer listens, so natural functions called from plain cells are displayed like `%%natural` cells, and
bound every cell by the cell budget when one is set.
"""

from __future__ import annotations

import sys
import weakref
from contextlib import AbstractContextManager, ExitStack, nullcontext
from typing import Any

from ._settings import NighthawkSettings
from ._table import LAZY_MAGICS, MAGICS_SPEC

__all__ = ["KernelState", "configure", "load", "state_for", "unload"]

_states: weakref.WeakKeyDictionary[Any, KernelState] = weakref.WeakKeyDictionary()


_SAVED_SETTINGS = "_nighthawk_settings"
"""Shell attribute holding the settings of the last unload, so a later load starts from them."""


class KernelState:
    """What the extension keeps for one shell: its settings and its step displayer."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.settings = NighthawkSettings(parent=shell)
        # `%reload_ext`, `%unload_ext` + autoload and a repeated `%load_ext` must not fall back to the default
        # model: that would send a kernel running on a replay store or a scripted model to a live provider.
        # The values live on the shell, which outlives any reload of this module.
        saved = getattr(shell, _SAVED_SETTINGS, None)
        if saved:
            self.settings.restore(saved)
        self.displayer: Any = None
        """The `StepDisplayer` listening to the event stream, once the core is imported."""
        self._cell_budget = ExitStack()

    def ready(self) -> None:
        """Install the kernel's executor (unless one is in force) and start displaying steps."""
        self.settings.ensure_installed()
        if self.displayer is None:
            from nighthawk import events

            from ._live import StepDisplayer

            self.displayer = StepDisplayer(lambda: self.settings.display)
            events.add_process_listener(self.displayer)
        _guard_exit(self.shell)

    def display_mode(self, mode: str | None) -> AbstractContextManager[None]:
        """Show the steps run inside the `with` block in `mode` (`None`: the kernel setting)."""
        if mode is None:
            return nullcontext()
        from ._live import display_mode_override

        return display_mode_override(mode)

    def pre_run_cell(self, info: Any = None) -> None:
        """IPython hook: get ready as soon as the core has been imported (cheap check otherwise), and open
        the cell's budget when one is set."""
        if "nighthawk" not in sys.modules:
            return
        self.ready()
        budget = self.settings.cell_budget() if info is not None else None
        if budget is not None:
            import nighthawk

            # Every step the cell starts counts against it: `%%natural`, natural functions, loops of them.
            self._cell_budget.enter_context(nighthawk.budget(budget))

    def post_run_cell(self, result: Any = None) -> None:
        """IPython hook: close the cell's budget."""
        try:
            self._cell_budget.close()
        except ValueError:  # the cell's code ran in another context than the hook; the scope ends anyway
            self._cell_budget = ExitStack()

    def close(self) -> None:
        """Keep the settings on the shell for the next load, stop listening and give the default executor back."""
        setattr(self.shell, _SAVED_SETTINGS, self.settings.snapshot())
        if self.displayer is not None:
            from nighthawk import events

            events.remove_process_listener(self.displayer)
            self.displayer = None
        _unguard_exit(self.shell)
        self.settings.uninstall()


def _guard_exit(shell: Any) -> None:
    """Make `exit()` and `quit()` called by code a step evaluates end that step, not the kernel.

    IPython's `exit` does not raise `SystemExit`: it asks the shell to stop (`ask_exit`), and a kernel then
    shuts down once the cell ends, losing the notebook's state. Raised inside a step instead, `SystemExit`
    ends the step with `StepAbortedError` like `sys.exit()` does. Elsewhere `exit()` works as always.
    """
    # A bare `InteractiveShell` has no way out to guard; terminal and kernel shells do.
    if not hasattr(shell, "ask_exit") or getattr(shell.ask_exit, "_nighthawk_guard", False):
        return
    from nighthawk._loop import running_user_code

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


def load(shell: Any) -> None:
    """`load_ipython_extension`: register settings, magics and the hook (idempotent)."""
    state = state_for(shell)
    if state.settings not in shell.configurables:
        shell.configurables.append(state.settings)
    manager = shell.magics_manager
    # A placeholder with another spec means IPython is loading us to resolve a declaration made elsewhere
    # (the startup file declares the magics against the `nighthawk` extension): the magic is about to run.
    resolving = any(
        getattr(manager.magics[kind].get(name), "spec", spec) != spec
        for kind, names in LAZY_MAGICS.items()
        for name, spec in names.items()
    )
    if resolving or "nighthawk_ipython._magics" in sys.modules:
        # About to be used, or already imported (a reload): register for real; a lazy declaration would
        # replace the placeholder IPython is resolving, or be skipped by its memory of loaded specs.
        from ._magics import NighthawkMagics

        manager.register(NighthawkMagics(shell=shell))
    else:
        for kind, names in LAZY_MAGICS.items():
            for name, spec in names.items():
                manager.register_lazy(name, spec, kind)
    for event, hook in (("pre_run_cell", state.pre_run_cell), ("post_run_cell", state.post_run_cell)):
        if hook not in shell.events.callbacks[event]:
            shell.events.register(event, hook)
    state.pre_run_cell()


def unload(shell: Any) -> None:
    """`unload_ipython_extension`: undo `load` (idempotent)."""
    state = _states.pop(shell, None)
    manager = shell.magics_manager
    for kind, names in LAZY_MAGICS.items():
        for name, spec in names.items():
            manager.magics[kind].pop(name, None)
            declared = manager.lazy_magics.get(name)
            if declared == spec:
                del manager.lazy_magics[name]
            elif declared is not None:
                _declare_again(manager, name, declared, kind)
    manager.registry.pop(MAGICS_SPEC.rpartition(":")[2], None)
    if state is None:
        return
    for event, hook in (("pre_run_cell", state.pre_run_cell), ("post_run_cell", state.post_run_cell)):
        if hook in shell.events.callbacks[event]:
            shell.events.unregister(event, hook)
    if state.settings in shell.configurables:
        shell.configurables.remove(state.settings)
    state.close()


def _declare_again(manager: Any, name: str, spec: str, kind: str) -> None:
    """Put back a lazy declaration made by someone else (the startup file declares the magics against the
    `nighthawk` extension), so the next use of the magic loads the extension again, as after a new start."""
    # IPython remembers which specs it has loaded and would not load this one a second time.
    loaded = getattr(manager, "_loaded_lazy", None)
    if isinstance(loaded, set):
        loaded.discard(spec)
    manager.register_lazy(name, spec, kind)


def configure(
    *,
    model: object = None,
    display: str | None = None,
    limits: dict[str, int] | None = None,
    budgets: dict[str, Any] | None = None,
    shell: Any = None,
) -> NighthawkSettings:
    """Change the kernel's Nighthawk settings from Python (the same settings as `%nighthawk`).

    Args:
        model: A `provider:model` string, a pydantic-ai `Model`, or a `StepExecutor`; `None` keeps it.
        display: `widget`, `html`, `text` or `none`; `None` keeps it.
        limits: Context limits (fields of `nighthawk.StepContextLimits`) replacing the current ones.
        budgets: Budgets and request settings (`{"step.requests": 20, "cell.cost_usd": 0.5,
            "request_timeout_s": 60}`; keys in `BUDGET_KEYS`) replacing the current ones.
        shell: The IPython shell; the running one by default.

    Returns:
        The settings object (also reachable as `%config NighthawkSettings`).

    Raises:
        RuntimeError: No IPython shell is running and none was given.
        traitlets.TraitError: A value is not allowed (the message says what is).
    """
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None:
            raise RuntimeError(
                "`nighthawk_ipython.configure` needs a running IPython; outside IPython call "
                "`nighthawk.set_default_step_executor(...)` instead"
            )
    state = state_for(shell)
    settings = state.settings
    if model is not None:
        settings.use_model(model, source=type(model).__name__ if not isinstance(model, str) else "")
    if display is not None:
        settings.display = display
    if limits is not None:
        settings.limits = dict(limits)
    if budgets is not None:
        settings.budgets = dict(budgets)
    return settings
