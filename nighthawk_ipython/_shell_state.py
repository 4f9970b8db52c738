"""The shell's own hooks, kept from a guarded step's code: what it changes there is put back when it ends.

IPython runs every later cell through lists the shell holds (`input_transformers_cleanup`,
`input_transformers_post`, `ast_transformers`, its transformer manager's line and token transforms) and calls what is registered for its events
(`pre_run_cell`, `post_execute`, ...). A function the model's code appends there runs on each of your
next cells, as your code, outside any step: the runtime policies cannot hold it. So while a step runs
under runtime guards, these are the user's shell state, not the step's: they are noted when the step
starts and put back as they were when it finishes (the lists themselves and what they hold), with a
warning that names what was undone. A step without runtime guards changes what it likes.

The core knows nothing of IPython: this is a process listener of the event stream (`StepStarted`,
`StepFinished`), added by the extension with its step displayer.
"""

from __future__ import annotations

import warnings
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


class ShellStateKeeper:
    """An event listener that puts the shell's transformer lists and event callbacks back after a guarded
    step (see the module's docstring)."""

    def __init__(self, shell: Any) -> None:
        self._shell = shell
        self._noted: dict[str, dict[str, tuple[object, list[object]]]] = {}

    def __call__(self, event: object) -> None:
        if isinstance(event, events.StepStarted):
            if any(oversight.runtime for oversight in in_force()):
                self._noted[event.invocation_id] = self._state()
        elif isinstance(event, events.StepFinished) and (noted := self._noted.pop(event.invocation_id, None)):
            undone = self._put_back(noted)
            if undone:
                warnings.warn(
                    f"the step's code changed the shell's {', '.join(undone)}; Nighthawk put them back as they were "
                    "(under runtime guards, what a step adds there would run on your next cells)",
                    RuntimeWarning,
                    stacklevel=1,
                )

    def _state(self) -> dict[str, tuple[object, list[object]]]:
        state = {name: (held, list(held)) for name in _LISTS if isinstance(held := self._get(name), list)}
        callbacks = getattr(getattr(self._shell, "events", None), "callbacks", None)
        if isinstance(callbacks, dict):
            state.update({f"{name} callbacks": (held, list(held)) for name, held in callbacks.items()})
        return state

    def _get(self, dotted: str) -> object:
        found: object = self._shell
        for name in dotted.split("."):
            found = getattr(found, name, None)
        return found

    def _put_back(self, noted: dict[str, tuple[object, list[object]]]) -> list[str]:
        undone = []
        for name, (held, items) in noted.items():
            replaced = name in _LISTS and self._get(name) is not held
            if replaced:
                owner, _, attribute = name.rpartition(".")
                setattr(self._get(owner) if owner else self._shell, attribute, held)
            # Compared by identity: an `__eq__` of the model's objects would run here, outside the step.
            changed = not isinstance(held, list) or len(held) != len(items) or any(a is not b for a, b in zip(held, items))
            if isinstance(held, list) and changed:
                held[:] = items
            if replaced or changed:
                undone.append(name)
        return undone
