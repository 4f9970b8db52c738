"""What one program of the eval suite is: natural code plus the checks that say whether a model ran it well."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Program", "raises"]


@dataclass(frozen=True, kw_only=True)
class Program:
    """A natural function (or a few) over shared Python state, and plain-Python checks of what it did.

    Each check is a function of no arguments that runs the program on one input and `assert`s about the
    result; it holds when it returns, and fails on any exception. Checks build their own state, so they
    can run in any order and at the same time.
    """

    name: str
    """Short identifier, used by `nighthawk eval --only`."""
    summary: str
    """One line: what the program asks of the model."""
    features: tuple[str, ...]
    """The kinds of shared state and Python features it exercises (`in-place mutation`, `closure`, ...)."""
    checks: tuple[Callable[[], None], ...]
    """The checks; each one's `__name__` says what it checks."""

    def __post_init__(self) -> None:
        names = [check.__name__ for check in self.checks]
        if len(set(names)) != len(names):
            raise ValueError(f"program {self.name!r} has two checks with the same name: {names!r}")


def raises(error_type: type[BaseException], call: Callable[[], object]) -> bool:
    """Whether `call()` raises `error_type` (for `assert raises(UnknownItem, lambda: parse(text))`)."""
    try:
        call()
    except error_type:
        return True
    return False
