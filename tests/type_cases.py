"""The types users annotate write bindings and return values with, and values of each kind for the type matrix.

Shared by the natural-function matrix (tests/core/test_types.py) and the `%%natural` cell matrix
(tests/kernel/test_cell_types.py). Every expression is evaluated in a namespace holding the names below.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypedDict

import pandas as pd
import pydantic
import pydantic.dataclasses
from typing_extensions import TypeAliasType


class Report(pydantic.BaseModel):
    title: str
    score: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


@pydantic.dataclasses.dataclass
class Span:
    start: int
    end: int


class Movie(TypedDict):  # `typing.TypedDict`, which pydantic refuses before Python 3.12
    title: str
    year: int


class Pair(NamedTuple):
    left: int
    right: str


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Ledger:
    """A plain class pydantic cannot build a schema for: checked with `isinstance`."""

    def __init__(self, total: int = 0) -> None:
        self.total = total

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ledger) and other.total == self.total

    __hash__ = None  # type: ignore[assignment]


Scores = TypeAliasType("Scores", list[int])

NAMESPACE: dict[str, object] = {
    "Report": Report,
    "Point": Point,
    "Span": Span,
    "Movie": Movie,
    "Pair": Pair,
    "Color": Color,
    "Ledger": Ledger,
    "Scores": Scores,
    "pd": pd,
}


@dataclass(frozen=True, kw_only=True)
class TypeCase:
    id: str
    annotation: object
    label: str
    """How the expected type is named in an `invalid_input` error."""
    committed_type: type
    expected: str
    """Expression of the value that must be committed for `valid` and `coercible`."""
    valid: str
    """Already a value of the type."""
    coercible: str | None
    """A value pydantic converts into the type (a dict into a model, "3" into 3); None when there is none."""
    invalid: str
    """A value that does not fit and must be refused."""


CASES: tuple[TypeCase, ...] = (
    TypeCase(id="int", annotation=int, label="int", committed_type=int, expected="3", valid="3", coercible="'3'", invalid="'three'"),
    TypeCase(id="float", annotation=float, label="float", committed_type=float, expected="2.0", valid="2.0", coercible="2", invalid="'two'"),
    TypeCase(id="str", annotation=str, label="str", committed_type=str, expected="'abc'", valid="'abc'", coercible="b'abc'", invalid="['a']"),
    TypeCase(id="bool", annotation=bool, label="bool", committed_type=bool, expected="True", valid="True", coercible="'yes'", invalid="'maybe'"),
    TypeCase(
        id="literal",
        annotation=Literal["low", "high"],
        label="Literal['low', 'high']",
        committed_type=str,
        expected="'high'",
        valid="'high'",
        coercible=None,
        invalid="'medium'",
    ),
    TypeCase(id="enum", annotation=Color, label="Color", committed_type=Color, expected="Color.RED", valid="Color.RED", coercible="'red'", invalid="'purple'"),
    TypeCase(
        id="optional",
        annotation=typing.Optional[int],  # noqa: UP045 - the spelling users still write
        label="Optional[int]",
        committed_type=int,
        expected="4",
        valid="4",
        coercible="'4'",
        invalid="'four'",
    ),
    TypeCase(id="union", annotation=int | None, label="int | None", committed_type=type(None), expected="None", valid="None", coercible=None, invalid="[]"),
    TypeCase(
        id="list-of-models",
        annotation=list[Report],
        label="list[",
        committed_type=list,
        expected="[Report(title='a', score=1)]",
        valid="[Report(title='a', score=1)]",
        coercible="[{'title': 'a', 'score': '1'}]",
        invalid="[{'title': 'a'}]",
    ),
    TypeCase(
        id="dict-of-models",
        annotation=dict[str, Report],
        label="dict[str,",
        committed_type=dict,
        expected="{'k': Report(title='a', score=1)}",
        valid="{'k': Report(title='a', score=1)}",
        coercible="{'k': {'title': 'a', 'score': 1}}",
        invalid="{'k': 5}",
    ),
    TypeCase(
        id="variadic-tuple",
        annotation=tuple[int, ...],
        label="tuple[int, ...]",
        committed_type=tuple,
        expected="(1, 2)",
        valid="(1, 2)",
        coercible="[1, '2']",
        invalid="('a',)",
    ),
    TypeCase(
        id="dataclass",
        annotation=Point,
        label="Point",
        committed_type=Point,
        expected="Point(1, 2)",
        valid="Point(1, 2)",
        coercible="{'x': 1, 'y': '2'}",
        invalid="{'x': 1}",
    ),
    TypeCase(
        id="pydantic-dataclass",
        annotation=Span,
        label="Span",
        committed_type=Span,
        expected="Span(start=0, end=5)",
        valid="Span(start=0, end=5)",
        coercible="{'start': '0', 'end': 5}",
        invalid="{'start': 'zero', 'end': 5}",
    ),
    TypeCase(
        id="basemodel",
        annotation=Report,
        label="Report",
        committed_type=Report,
        expected="Report(title='q3', score=7)",
        valid="Report(title='q3', score=7)",
        coercible="{'title': 'q3', 'score': '7'}",
        invalid="{'title': 'q3', 'score': 'high'}",
    ),
    TypeCase(
        id="typeddict",
        annotation=Movie,
        label="Movie",
        committed_type=dict,
        expected="{'title': 'Heat', 'year': 1995}",
        valid="{'title': 'Heat', 'year': 1995}",
        coercible="{'title': 'Heat', 'year': '1995'}",
        invalid="{'title': 'Heat'}",
    ),
    TypeCase(
        id="namedtuple",
        annotation=Pair,
        label="Pair",
        committed_type=Pair,
        expected="Pair(1, 'a')",
        valid="Pair(1, 'a')",
        coercible="[1, 'a']",
        invalid="(1,)",
    ),
    TypeCase(
        id="type-alias",
        annotation=Scores,
        label="Scores",
        committed_type=list,
        expected="[1, 2]",
        valid="[1, 2]",
        coercible="['1', 2]",
        invalid="['x']",
    ),
    TypeCase(
        id="plain-class",
        annotation=Ledger,
        label="Ledger",
        committed_type=Ledger,
        expected="Ledger(5)",
        valid="Ledger(5)",
        coercible=None,
        invalid="{'total': 5}",
    ),
    TypeCase(
        id="dataframe",
        annotation=pd.DataFrame,
        label="DataFrame",
        committed_type=pd.DataFrame,
        expected="pd.DataFrame({'a': [1, 2]})",
        valid="pd.DataFrame({'a': [1, 2]})",
        coercible=None,
        invalid="[{'a': 1}, {'a': 2}]",
    ),
)

COERCIBLE = tuple(case for case in CASES if case.coercible is not None)


def same(committed: object, expected: object) -> bool:
    """Equal values of exactly the same type (DataFrames compare with `.equals`)."""
    if type(committed) is not type(expected):
        return False
    if isinstance(expected, pd.DataFrame):
        return expected.equals(committed)
    return bool(committed == expected)
