"""What a table's columns hold, in a few words each: the part of a DataFrame preview a model reads first.

The first rows of a wide table show a handful of values and hide the columns past the budget. A column by
column description shows every column (up to the renderer's limit) with its dtype and what it holds: a
numeric range, a few distinct values (most common first), a category's levels, a date range, and its nulls
(`"region":"object, 4 distinct: north, south, east, west"`, `"revenue":"float64 12.5..4980.25, 3 nulls"`).
Duck typed, so pandas is never imported here; floats are written at the precision pandas displays them.
"""

from __future__ import annotations

import datetime
import math
import sys

__all__ = ["column_label", "display_number", "index_label", "readable_key"]

# Distinct values are counted in at most this many leading rows: a 10**7-row column costs what this costs.
_SAMPLE_ROWS = 20_000
_MOST_VALUES = 4
_MAX_VALUE_CHARS = 24
_DEFAULT_PRECISION = 6


def _precision() -> int:
    """pandas' `display.precision` when pandas is loaded (the digits a notebook shows), else its default."""
    pandas = sys.modules.get("pandas")
    try:
        precision = pandas.get_option("display.precision") if pandas is not None else _DEFAULT_PRECISION
    except Exception:
        return _DEFAULT_PRECISION
    return precision if isinstance(precision, int) else _DEFAULT_PRECISION


def display_number(value: object) -> object:
    """`value` as a table shows it: a float rounded to the displayed precision (`65409.83`, not
    `65409.829999999994`), a numpy scalar as the Python number it holds; anything else as is."""
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        value = item()
    if isinstance(value, float) and math.isfinite(value):
        return round(value, _precision())
    return value


def readable_key(key: object) -> object:
    """An index label as people read it: a midnight timestamp as its date, other times in ISO form."""
    if isinstance(key, datetime.datetime):
        if key.tzinfo is None and key.time() == datetime.time():
            return key.date().isoformat()
        return key.isoformat(sep=" ")
    return display_number(key)


def _value_text(value: object) -> str:
    shown = readable_key(value)
    text = shown if isinstance(shown, str) else repr(shown)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


def _listed(values: list[object], total: int) -> str:
    return ", ".join(_value_text(value) for value in values[:_MOST_VALUES]) + (", …" if total > _MOST_VALUES else "")


def column_label(column: object) -> str:
    """What a pandas Series (a column) holds, as the module notes show."""
    dtype = column.dtype  # type: ignore[attr-defined]
    name = str(dtype)
    kind = getattr(dtype, "kind", "O")
    length = len(column)  # type: ignore[arg-type]
    sample = column if length <= _SAMPLE_ROWS else column.iloc[:_SAMPLE_ROWS]  # type: ignore[attr-defined]
    if name == "category":
        levels = list(column.cat.categories)  # type: ignore[attr-defined]
        text = f"category, {len(levels)} levels: {_listed(levels, len(levels))}"
    elif kind in "iufMm" and length:
        low, high = column.min(), column.max()  # type: ignore[attr-defined]
        distinct = sample.nunique()
        if kind in "iu" and distinct <= _MOST_VALUES:
            values = sorted(sample.dropna().unique().tolist())
            text = f"{name}, values {_listed(values, distinct)}"
        else:
            text = f"{name} {_value_text(low)}..{_value_text(high)}"
    elif kind == "b":
        text = f"bool, {int(column.sum())} true of {length}"  # type: ignore[attr-defined]
    else:
        counts = sample.value_counts()  # type: ignore[attr-defined]
        values = counts.index[:_MOST_VALUES].tolist()
        within = f" in the first {_SAMPLE_ROWS}" if length > _SAMPLE_ROWS else ""
        text = f"{name}, {len(counts)} distinct{within}: {_listed(values, len(counts))}" if len(counts) else name
    nulls = int(column.isna().sum())  # type: ignore[attr-defined]
    return f"{text}, {nulls} null{'' if nulls == 1 else 's'}" if nulls else text


def index_label(index: object) -> str | None:
    """An index that is not the default `0..n-1`, in a few words (`DatetimeIndex 2023-01-01..2023-12-31`);
    `None` for the default one."""
    kind = type(index).__name__
    length = len(index)  # type: ignore[arg-type]
    if kind == "RangeIndex" and getattr(index, "start", None) == 0 and getattr(index, "step", None) == 1:
        return None
    if not length:
        return kind
    return f"{kind} {_value_text(index[0])}..{_value_text(index[length - 1])}"  # type: ignore[index]
