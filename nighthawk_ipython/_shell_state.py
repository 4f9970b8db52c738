"""The shell's own hooks, kept from a guarded step's code: what it changes there is put back when it ends.

IPython runs every later cell through lists the shell holds (`input_transformers_cleanup`,
`input_transformers_post`, `ast_transformers`, its transformer manager's line and token transforms), calls
what is registered for its events (`pre_run_cell`, `post_execute`, ...), shows every result through its
display formatters (`for_type` printers), and calls its hooks (`set_hook`) and its custom exception handler
(`set_custom_exc`). A function the model's code appends there runs on each of your
next cells, as your code, outside any step: the runtime policies cannot hold it. So while a step runs
under runtime guards, these are the user's shell state, not the step's: they are noted when the step
starts and put back as they were when it finishes (the lists themselves and what they hold), with a
warning that names what was undone. A step without runtime guards changes what it likes.

The core knows nothing of IPython: this is a process listener of the event stream (`StepStarted`,
`StepFinished`), added by the extension with its step displayer.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from nighthawk import events
from nighthawk.oversight._oversee import in_force

__all__ = ["ShellStateKeeper"]

_LISTS = (
    "input_transformers_cleanup",
    "input_transformers_post",
    "ast_transformers",
    "input_transformer_manager.line_transforms",
    "input_transformer_manager.token_transformers",
)
_PRINTERS = ("type_printers", "deferred_printers", "singleton_printers")
"""What a display formatter calls for a type, a type named by module, or one object (`for_type` and kin)."""


@dataclass(frozen=True)
class _Kept:
    """One piece of the shell's state as a step found it: where it hangs (`owner.attribute`, or nowhere for an
    event's callbacks) and, for a list or a dict, what it held."""

    label: str
    owner: object
    attribute: str | None
    held: object
    contents: list[object] | None


class ShellStateKeeper:
    """An event listener that puts the shell's transformer lists, event callbacks, display formatters, hooks and
    custom exception handler back after a guarded step (see the module's docstring)."""

    def __init__(self, shell: Any) -> None:
        self._shell = shell
        self._noted: dict[str, list[_Kept]] = {}

    def __call__(self, event: object) -> None:
        if isinstance(event, events.StepStarted):
            if any(oversight.runtime for oversight in in_force()):
                self._noted[event.invocation_id] = self._state()
        elif isinstance(event, events.StepFinished) and (noted := self._noted.pop(event.invocation_id, None)):
            undone = list(dict.fromkeys(kept.label for kept in noted if _put_back(kept)))
            if undone:
                warnings.warn(
                    f"the step's code changed the shell's {', '.join(undone)}; Nighthawk put them back as they were "
                    "(under runtime guards, what a step adds there would run on your next cells)",
                    RuntimeWarning,
                    stacklevel=1,
                )

    def _state(self) -> list[_Kept]:
        shell = self._shell
        state = []
        for dotted in _LISTS:
            owner_name, _, attribute = dotted.rpartition(".")
            owner = getattr(shell, owner_name, None) if owner_name else shell
            state.append(_noted(dotted, owner, attribute))
        callbacks = getattr(getattr(shell, "events", None), "callbacks", None)
        if isinstance(callbacks, dict):
            state += [_noted(f"{name} callbacks", None, None, held) for name, held in callbacks.items()]
        display = getattr(shell, "display_formatter", None)
        formatters = getattr(display, "formatters", None)
        if isinstance(formatters, dict):
            state.append(_noted("display formatters", display, "formatters"))
            # Two formatters stand outside that dict: `_ipython_display_` and `_repr_mimebundle_` lookups.
            others = {name: getattr(display, f"{name}_formatter", None) for name in ("ipython_display", "mimebundle")}
            for mime, formatter in {**formatters, **others}.items():
                if formatter is not None:
                    state += [_noted(f"{mime} display printers", formatter, name) for name in _PRINTERS]
        hooks = getattr(shell, "hooks", None)
        if isinstance(hooks, dict):  # `set_hook` adds to a hook's chain, or a hook of a new name
            state.append(_noted("hooks", shell, "hooks"))
            state += [_noted(f"{name} hook", dispatcher, "chain") for name, dispatcher in hooks.items()]
        state += [_noted("custom exception handler", shell, name) for name in ("custom_exceptions", "CustomTB")]
        return [kept for kept in state if kept.held is not _ABSENT]


_ABSENT = object()


def _noted(label: str, owner: object, attribute: str | None, held: object = _ABSENT) -> _Kept:
    if attribute is not None:
        held = getattr(owner, attribute, _ABSENT)
    return _Kept(label, owner, attribute, held, _flat(held) if isinstance(held, (dict, list)) else None)


def _flat(held: dict[object, object] | list[object]) -> list[object]:
    """What a list holds, or a dict's keys and values in turn: a list to compare item by item by identity."""
    return [part for pair in held.items() for part in pair] if isinstance(held, dict) else list(held)


def _put_back(kept: _Kept) -> bool:
    """Put `kept` back as it was; whether anything had changed."""
    replaced = kept.attribute is not None and getattr(kept.owner, kept.attribute, _ABSENT) is not kept.held
    if replaced:
        setattr(kept.owner, kept.attribute, kept.held)  # type: ignore[arg-type]
    held, contents = kept.held, kept.contents
    if contents is None:
        return replaced
    now = _flat(held)  # type: ignore[arg-type]
    # Compared by identity, in order: an `__eq__` or `__hash__` of the model's objects would run here,
    # outside the step.
    changed = len(now) != len(contents) or any(a is not b for a, b in zip(now, contents))
    if changed and isinstance(held, dict):
        held.clear()
        held.update(zip(contents[::2], contents[1::2]))  # the user's own keys: hashing them runs no model code
    elif changed and isinstance(held, list):
        held[:] = contents
    return replaced or changed
