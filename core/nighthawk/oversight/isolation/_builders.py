"""The kernel's builders of data, by name, for values crossing from an isolated child (`_values.py` reads them,
`_python_values.py` and `_array_values.py` define them), and the checks they make of their arguments."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

__all__ = ["BUILDERS", "UnsafeValueError", "builder", "check", "integers", "short_text"]


class UnsafeValueError(pickle.UnpicklingError):
    """The child's answer is not data the kernel rebuilds (it names something else, or its parts do not fit)."""


BUILDERS: dict[str, Callable[..., Any]] = {}
"""The kernel's builders of data by name: all an answer may name or call (`_value_forms.py` picks one a value)."""


def builder(function: Callable[..., Any]) -> Callable[..., Any]:
    BUILDERS[function.__name__] = function
    return function


def check(condition: bool, what: str) -> None:
    if not condition:
        raise UnsafeValueError(f"the isolated child's answer holds {what}")


def short_text(value: object, limit: int = 64) -> str:
    check(isinstance(value, str) and len(value) <= limit, f"a name or text over {limit} characters where a short one belongs")
    return value  # type: ignore[return-value]


def integers(*values: object) -> None:
    check(all(isinstance(value, int) and not isinstance(value, bool) for value in values), "a non-integer where integers belong")
