"""The suite: every eval program in a fixed order, and picking some of them by name."""

from __future__ import annotations

from collections.abc import Iterable

from . import programs_objects, programs_python, programs_text
from .program import Program

__all__ = ["PROGRAMS", "select"]

PROGRAMS: tuple[Program, ...] = (*programs_text.PROGRAMS, *programs_objects.PROGRAMS, *programs_python.PROGRAMS)
"""All 25 programs: text and numbers, then objects the caller owns, then Python made by the model."""


def select(names: Iterable[str] | None = None) -> tuple[Program, ...]:
    """The programs named (in suite order), or all of them for `None`.

    Raises:
        ValueError: A name is not a program of the suite.
    """
    if names is None:
        return PROGRAMS
    wanted = set(names)
    unknown = sorted(wanted - {program.name for program in PROGRAMS})
    if unknown:
        raise ValueError(
            f"`only` names no program {unknown!r}; the programs are {', '.join(p.name for p in PROGRAMS)} "
            "(`nighthawk eval --list` shows them)"
        )
    return tuple(program for program in PROGRAMS if program.name in wanted)
