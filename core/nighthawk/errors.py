"""Exceptions raised by Nighthawk.

Every exception the runtime raises on its own account derives from `NighthawkError`::

    NighthawkError                  a runtime precondition failed (no executor, no active step, ...)
    ├── NaturalParseError           a Natural block, its bindings or its frontmatter could not be read
    ├── ExecutionError              a Natural block ran but did not end in a valid outcome
    │   └── ReplayMissError         a replay store has no answer for a request
    ├── ToolEvaluationError         an expression evaluated by `nh_eval`/`nh_assign` raised
    ├── ToolValidationError         a value assigned by `nh_assign` does not fit the binding's type
    └── ToolRegistrationError       a user tool has a bad name or clashes with another one

A `raise` outcome is not a Nighthawk error: the exception type the model names is raised as is.
Python's own `NameError`/`UnboundLocalError` surface unchanged when a read binding cannot be resolved.
"""

from __future__ import annotations

__all__ = [
    "ExecutionError",
    "NaturalParseError",
    "NighthawkError",
    "ReplayMissError",
    "ToolEvaluationError",
    "ToolRegistrationError",
    "ToolValidationError",
]


class NighthawkError(Exception):
    """Base class of every Nighthawk exception; raised itself when a runtime precondition fails."""


class NaturalParseError(NighthawkError):
    """A Natural block, its bindings or its frontmatter could not be parsed (the fault is in the source)."""

    def __init__(self, message: str, *, filename: str | None = None, line: int | None = None) -> None:
        self.filename = filename
        self.line = line
        where = f"{filename}:{line}: " if filename and line else (f"{filename}: " if filename else "")
        super().__init__(f"{where}{message}")


class ExecutionError(NighthawkError):
    """A Natural block did not end in a valid outcome (the fault is the model's or the provider's)."""


class ReplayMissError(ExecutionError):
    """In `replay` mode, the store has no answer for a request (the prompt, data, tools or settings changed)."""


class ToolEvaluationError(NighthawkError):
    """An expression evaluated inside `nh_eval` or `nh_assign` raised."""


class ToolValidationError(NighthawkError):
    """A value assigned with `nh_assign` could not be validated against the binding's type."""


class ToolRegistrationError(NighthawkError):
    """A user tool could not be registered: invalid name, or a name clash without `overwrite=True`."""
