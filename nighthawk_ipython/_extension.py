"""Loading and unloading the extension, and `configure`.

Loading only registers what IPython needs to know about: the settings `Configurable`, the magics (lazily,
from `_table.LAZY_MAGICS`) and `pre_run_cell`/`post_run_cell` hooks of the shell's `KernelState` (`_state`).
The core, pydantic-ai and ipywidgets are imported when a step first needs them, and the magics module when a
magic is first used.
"""

from __future__ import annotations

import sys
from typing import Any

from ._settings import NighthawkSettings
from ._state import forget_state, state_for
from ._table import LAZY_MAGICS, MAGICS_SPEC

__all__ = ["configure", "load", "unload"]

_REPLACED = "_nighthawk_replaced_declarations"
"""Shell attribute: the lazy declarations made elsewhere that `load` replaced, by (name, kind) (the shell
outlives any reload of this module)."""


def load(shell: Any) -> None:
    """`load_ipython_extension`: register settings, magics and the hook (idempotent)."""
    state = state_for(shell)
    if state.settings not in shell.configurables:
        shell.configurables.append(state.settings)
    manager = shell.magics_manager
    resolving = _resolving(manager)
    if resolving or "nighthawk_ipython._magics" in sys.modules:
        # About to be used, or already imported (a reload): register for real; a lazy declaration would
        # replace the placeholder IPython is resolving, or be skipped by its memory of loaded specs.
        # Imported only on this path: otherwise the magics module waits for the first magic (lazy table).
        from ._magics import NighthawkMagics

        manager.register(NighthawkMagics(shell=shell))
    else:
        for kind, names in LAZY_MAGICS.items():
            for name, spec in names.items():
                # Our declaration replaces the startup file's; unloading puts that one back (`unload`).
                placeholder_spec = getattr(manager.magics[kind].get(name), "spec", spec)
                if placeholder_spec != spec:
                    vars(shell).setdefault(_REPLACED, {})[name, kind] = placeholder_spec
                manager.register_lazy(name, spec, kind)
    for event, hook in (("pre_run_cell", state.pre_run_cell), ("post_run_cell", state.post_run_cell)):
        if hook not in shell.events.callbacks[event]:
            shell.events.register(event, hook)
    state.prepare_on_first_use()


def _resolving(manager: Any) -> bool:
    """Whether IPython is loading us to resolve a declaration made elsewhere: the magic is about to run.

    The startup file declares the magics against the `nighthawk` extension, so in most kernels a placeholder
    with that spec stands in the table when the user types `%load_ext nighthawk` as well; only a placeholder
    whose spec IPython has started to load (it marks the spec before loading the extension) is being resolved.
    """
    started = getattr(manager, "_loaded_lazy", None)
    for kind, names in LAZY_MAGICS.items():
        for name, spec in names.items():
            declared = getattr(manager.magics[kind].get(name), "spec", spec)
            # Without IPython's mark, register for real: always right, only slower.
            if declared != spec and (not isinstance(started, set) or declared in started):
                return True
    return False


def unload(shell: Any) -> None:
    """`unload_ipython_extension`: undo `load` (idempotent)."""
    state = forget_state(shell)
    manager = shell.magics_manager
    replaced: dict[tuple[str, str], str] = vars(shell).pop(_REPLACED, {})
    for kind, names in LAZY_MAGICS.items():
        for name, spec in names.items():
            manager.magics[kind].pop(name, None)
            declared = manager.lazy_magics.get(name)
            if declared == spec:
                del manager.lazy_magics[name]
                declared = replaced.get((name, kind))
            if declared is not None:
                _declare_again(shell, name, declared, kind)
    manager.registry.pop(MAGICS_SPEC.rpartition(":")[2], None)
    if state is None:
        return
    for event, hook in (("pre_run_cell", state.pre_run_cell), ("post_run_cell", state.post_run_cell)):
        if hook in shell.events.callbacks[event]:
            shell.events.unregister(event, hook)
    if state.settings in shell.configurables:
        shell.configurables.remove(state.settings)
    state.close()


def _declare_again(shell: Any, name: str, spec: str, kind: str) -> None:
    """Put back a lazy declaration made by someone else (the startup file declares the magics against the
    `nighthawk` extension), so the next use of the magic loads the extension again, as after a new start."""
    manager = shell.magics_manager
    # IPython remembers which specs it has loaded and would not load this one a second time; nor would its
    # extension manager load again the extension the declaration names, which it still counts as loaded.
    loaded = getattr(manager, "_loaded_lazy", None)
    if isinstance(loaded, set):
        loaded.discard(spec)
    shell.extension_manager.loaded.discard(spec)
    manager.register_lazy(name, spec, kind)


def configure(
    *,
    model: object = None,
    display: str | None = None,
    limits: dict[str, int] | None = None,
    budgets: dict[str, Any] | None = None,
    confirm: bool | None = None,
    shell: Any = None,
) -> NighthawkSettings:
    """Change the kernel's Nighthawk settings from Python (the same settings as `%nighthawk`).

    Args:
        model: A `provider:model` string, a pydantic-ai `Model`, or a `StepExecutor`; `None` keeps it.
        display: `widget`, `html`, `text` or `none`; `None` keeps it.
        limits: Context limits (fields of `nighthawk.StepContextLimits`) replacing the current ones.
        budgets: Budgets and request settings (`{"step.requests": 20, "cell.cost_usd": 0.5,
            "request_timeout_s": 60}`; keys in `BUDGET_KEYS`) replacing the current ones.
        confirm: Ask before every tool call (`%nighthawk confirm on|off`); `None` keeps it.
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
    if confirm is not None:
        settings.confirm = confirm
    return settings
