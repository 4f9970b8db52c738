"""Loading and unloading the extension, and the per-shell state it keeps.

Loading only registers what IPython needs to know about: the settings `Configurable`, the magics (lazily,
from `_table.LAZY_MAGICS`) and a `pre_run_cell` hook. The core, pydantic-ai and ipywidgets are imported
when a step first needs them. Once `nighthawk` is imported (always the case after `%load_ext nighthawk`),
the hook makes sure that the kernel's executor is the default one and that the step displayer listens, so
natural functions called from plain cells are displayed like `%%natural` cells.
"""

from __future__ import annotations

import sys
import weakref
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ._settings import NighthawkSettings
from ._table import LAZY_MAGICS, MAGICS_SPEC

__all__ = ["KernelState", "configure", "load", "state_for", "unload"]

_states: weakref.WeakKeyDictionary[Any, KernelState] = weakref.WeakKeyDictionary()


class KernelState:
    """What the extension keeps for one shell: its settings and its step displayer."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.settings = NighthawkSettings(parent=shell)
        self.displayer: Any = None
        """The `StepDisplayer` listening to the event stream, once the core is imported."""

    def ready(self) -> None:
        """Install the kernel's executor (unless one is in force) and start displaying steps."""
        self.settings.ensure_installed()
        if self.displayer is None:
            from nighthawk import events

            from ._live import StepDisplayer

            self.displayer = StepDisplayer(lambda: self.settings.display)
            events.add_process_listener(self.displayer)

    def display_mode(self, mode: str | None) -> AbstractContextManager[None]:
        """Show the steps run inside the `with` block in `mode` (`None`: the kernel setting)."""
        if mode is None:
            return nullcontext()
        from ._live import display_mode_override

        return display_mode_override(mode)

    def pre_run_cell(self, info: Any = None) -> None:
        """IPython hook: get ready as soon as the core has been imported (cheap check otherwise)."""
        if "nighthawk" in sys.modules:
            self.ready()

    def close(self) -> None:
        """Stop listening and give the default executor back."""
        if self.displayer is not None:
            from nighthawk import events

            events.remove_process_listener(self.displayer)
            self.displayer = None
        self.settings.uninstall()


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
    if state.pre_run_cell not in shell.events.callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", state.pre_run_cell)
    state.pre_run_cell()


def unload(shell: Any) -> None:
    """`unload_ipython_extension`: undo `load` (idempotent)."""
    state = _states.pop(shell, None)
    manager = shell.magics_manager
    for kind, names in LAZY_MAGICS.items():
        for name, spec in names.items():
            manager.magics[kind].pop(name, None)
            if manager.lazy_magics.get(name) == spec:
                del manager.lazy_magics[name]
    manager.registry.pop(MAGICS_SPEC.rpartition(":")[2], None)
    if state is None:
        return
    if state.pre_run_cell in shell.events.callbacks["pre_run_cell"]:
        shell.events.unregister("pre_run_cell", state.pre_run_cell)
    if state.settings in shell.configurables:
        shell.configurables.remove(state.settings)
    state.close()


def configure(
    *,
    model: object = None,
    display: str | None = None,
    limits: dict[str, int] | None = None,
    shell: Any = None,
) -> NighthawkSettings:
    """Change the kernel's Nighthawk settings from Python (the same settings as `%nighthawk`).

    Args:
        model: A `provider:model` string, a pydantic-ai `Model`, or a `StepExecutor`; `None` keeps it.
        display: `widget`, `html`, `text` or `none`; `None` keeps it.
        limits: Context limits (fields of `nighthawk.StepContextLimits`) replacing the current ones.
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
    return settings
