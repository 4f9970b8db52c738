"""The kernel's builders of numpy's and pandas' values: each checks its arguments and makes its value with the
public, validating constructors (`numpy.frombuffer`, `pandas.Categorical.from_codes`,
`pandas.MultiIndex(verify_integrity=True)`), so that no size, shape, code or time zone the child chose makes the
kernel allocate, read out of bounds or crash."""

from __future__ import annotations

import math
import re
from typing import Any

from ._builders import builder, check, integers, short_text
from ._python_values import time_zone

__all__ = ["EXTENSION_DTYPE", "checked_frequency", "small_metadata"]


# --- numpy -------------------------------------------------------------------------------------------------------


def _plain_dtype(description: object) -> Any:
    import numpy

    check(isinstance(description, (str, list)), "a dtype described by something else than text or fields")
    dtype = numpy.dtype(description if isinstance(description, str) else [tuple(field) for field in description])
    check(not dtype.hasobject, "a dtype of raw bytes that holds objects")
    return dtype


def _shape(shape: object) -> tuple[int, ...]:
    check(isinstance(shape, tuple) and all(isinstance(side, int) and side >= 0 for side in shape), "an array shape that is not one")
    return shape  # type: ignore[return-value]


@builder
def array_(description: object, shape: tuple[int, ...], fortran: bool, data: bytes) -> Any:
    import numpy

    dtype, shape = _plain_dtype(description), _shape(shape)
    check(isinstance(data, (bytes, bytearray)) and math.prod(shape) * dtype.itemsize == len(data), "an array whose bytes do not fill its shape")
    return numpy.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy(order="K")


@builder
def object_array_(shape: tuple[int, ...], items: list[object]) -> Any:
    import numpy

    shape = _shape(shape)
    check(isinstance(items, list) and len(items) == math.prod(shape), "an array whose items do not fill its shape")
    made = numpy.empty(len(items), dtype=object)
    for at, item in enumerate(items):  # one by one: a list item assigned as a slice would be spread over the array
        made[at] = item
    return made.reshape(shape)


@builder
def scalar_(description: object, data: bytes) -> Any:
    import numpy

    dtype = _plain_dtype(description)
    check(isinstance(data, bytes) and len(data) == dtype.itemsize, "a numpy scalar of the wrong size")
    return numpy.frombuffer(data, dtype=dtype)[0]


@builder
def masked_array_(data: Any, mask: Any, fill_value: object = None) -> Any:
    import numpy

    check(type(data) is numpy.ndarray and type(mask) is numpy.ndarray and mask.dtype == bool and mask.shape == data.shape, "a masked array of the wrong parts")
    check(fill_value is None or isinstance(fill_value, (numpy.generic, int, float, complex, str, bytes, bool)), "a fill value that is not a scalar")
    return numpy.ma.MaskedArray(data, mask=mask, fill_value=fill_value)  # numpy refuses one its dtype cannot hold


# --- pandas ------------------------------------------------------------------------------------------------------


def _pandas() -> Any:
    import pandas

    return pandas


def _ndarray(value: object, kinds: str) -> Any:
    import numpy

    check(type(value) is numpy.ndarray and value.ndim == 1 and value.dtype.kind in kinds, f"a column of dtype kind outside {kinds!r}")
    return value


def _no_longer_than(index: Any, data: int) -> Any:
    """A range index where the data it labels is not: no longer than that data, or a million (a range of a billion
    is a few bytes, and materialised by many an operation)."""
    if isinstance(index, _pandas().RangeIndex):
        check(len(index) <= max(data, 1_000_000), "a range far longer than the data it goes with")
    return index


@builder
def categorical_(codes: Any, categories: Any, ordered: bool) -> Any:
    pandas = _pandas()
    codes = _ndarray(codes, "iu")
    check(isinstance(categories, pandas.Index) and isinstance(ordered, bool), "a categorical of the wrong parts")
    categories = _no_longer_than(categories, len(codes))
    return pandas.Categorical.from_codes(codes, dtype=pandas.CategoricalDtype(categories, ordered=ordered))


@builder
def datetimes_(values: Any, zone: str | None) -> Any:
    pandas = _pandas()
    made = pandas.DatetimeIndex(_ndarray(values, "M"))
    return (made.tz_localize("UTC").tz_convert(time_zone(zone)) if zone is not None else made).array


_MASKED = {"integer": ("iu", "IntegerArray"), "floating": ("f", "FloatingArray"), "boolean": ("b", "BooleanArray")}


@builder
def masked_(kind: str, values: Any, mask: Any) -> Any:
    check(kind in _MASKED, "a nullable array of an unknown kind")
    kinds, name = _MASKED[kind]
    values, mask = _ndarray(values, kinds), _ndarray(mask, "b")
    check(len(values) == len(mask), "a nullable array whose mask does not fit")
    return getattr(_pandas().arrays, name)(values, mask)


EXTENSION_DTYPE = re.compile(r"(string|str|string\[python\]|string\[pyarrow\]|[a-z0-9_]+(\[[a-z0-9_, :]+\])?\[pyarrow\])")


@builder
def extension_(dtype: str, items: list[object]) -> Any:
    check(EXTENSION_DTYPE.fullmatch(short_text(dtype)) is not None and isinstance(items, list), f"an array of the dtype {dtype!r}")
    return _pandas().array(items, dtype=dtype)


@builder
def periods_(ordinals: Any, frequency: str) -> Any:
    pandas = _pandas()
    return pandas.arrays.PeriodArray(_ndarray(ordinals, "i").astype("int64"), dtype=pandas.PeriodDtype(short_text(frequency, 32)))


@builder
def intervals_(left: Any, right: Any, closed: str) -> Any:
    pandas = _pandas()
    check(closed in ("left", "right", "both", "neither") and all(isinstance(side, pandas.Index) for side in (left, right)), "intervals of the wrong parts")
    check(not any(isinstance(side, pandas.RangeIndex) for side in (left, right)), "intervals with a range for a side")
    return pandas.arrays.IntervalArray.from_arrays(left, right, closed=closed)


def _column(value: object) -> Any:
    """A frame's column, a series' or an index's values: an array a builder made (numpy's or pandas')."""
    import numpy

    pandas = _pandas()
    check(type(value) is numpy.ndarray and value.ndim == 1 or isinstance(value, pandas.api.extensions.ExtensionArray), "a column that is not an array")
    return value


@builder
def index_(values: Any, name: object, frequency: str | None = None) -> Any:
    values = _column(values)
    pandas = _pandas()
    if frequency is None:
        return pandas.Index(values, name=name, tupleize_cols=False, copy=False, **_its_dtype(values))
    check(values.dtype.kind in "mM", "a frequency on an index that is not of times")
    times = pandas.DatetimeIndex if values.dtype.kind == "M" else pandas.TimedeltaIndex
    # pandas checks the times against the frequency, and refuses times that do not follow it
    return times(values, name=name, freq=checked_frequency(short_text(frequency, 32), len(values)))


_FAST_FREQUENCIES = (
    "Day", "Week", "MonthBegin", "MonthEnd", "QuarterBegin", "QuarterEnd", "YearBegin", "YearEnd", "BusinessDay",
    "BusinessMonthBegin", "BusinessMonthEnd",
)
"""Frequencies pandas checks an index against in numpy's time (about 9 ms for 200,000 times); others, such as a
week of the month, step through each time in Python (2 s for as many)."""
_CHECKED_TIMES = 10_000
"""The most times checked against a frequency pandas steps through (about 50 ms for the slowest)."""


def checked_frequency(frequency: str, times: int) -> Any:
    """The offset `frequency` names, if the kernel can check that many times against it quickly.

    Raises:
        UnsafeValueError: The offset would cost the kernel seconds to check.
    """
    from pandas.tseries.frequencies import to_offset
    from pandas.tseries.offsets import Tick

    offset = to_offset(frequency)
    check(isinstance(offset, Tick) or type(offset).__name__ in _FAST_FREQUENCIES or times <= _CHECKED_TIMES,
          f"a frequency ({frequency}) too slow to check against {times:,} times")
    return offset


def _its_dtype(values: Any) -> dict[str, Any]:
    """The dtype a numpy column had, kept: pandas would infer another from objects (text as `str`, datetimes)."""
    import numpy

    return {"dtype": values.dtype} if isinstance(values, numpy.ndarray) else {}


@builder
def range_index_(start: int, stop: int, step: int, name: object) -> Any:
    integers(start, stop, step)
    return _pandas().RangeIndex(start, stop, step, name=name)


@builder
def multi_index_(levels: list[Any], codes: list[Any], names: list[object]) -> Any:
    pandas = _pandas()
    check(isinstance(levels, list) and isinstance(codes, list) and isinstance(names, list) and len(levels) == len(codes) == len(names)
           and all(isinstance(level, pandas.Index) for level in levels), "a multi-level index of the wrong parts")
    codes = [_ndarray(code, "iu") for code in codes]
    levels = [_no_longer_than(level, len(code)) for level, code in zip(levels, codes, strict=True)]
    return pandas.MultiIndex(levels=levels, codes=codes, names=names, verify_integrity=True)


def _an_index(value: object) -> Any:
    check(isinstance(value, _pandas().Index), "an index that is not one")
    return value


@builder
def series_(values: Any, index: Any, name: object, attrs: dict[str, Any] | None = None) -> Any:
    values, index = _column(values), _an_index(index)
    check(len(values) == len(index), "a series whose index does not fit its values")
    return _with_attrs(_pandas().Series(values, index=index, name=name, copy=False, **_its_dtype(values)), attrs)


def _with_attrs(made: Any, attrs: dict[str, Any] | None) -> Any:
    if attrs is not None:
        check(type(attrs) is dict and small_metadata(attrs), "attrs that are not small metadata")
        made.attrs = attrs
    return made


_METADATA_ITEMS = 10_000


def small_metadata(value: object) -> bool:
    """Whether `value` is metadata, as `attrs` hold: texts, numbers, flags and `None`, in lists, tuples and dicts
    of text keys, 10,000 items in all. pandas copies a frame's `attrs` deeply at almost every operation, so a
    large value there (an array) would cost each one."""
    budget = _METADATA_ITEMS
    pending = [value]
    while pending:
        item = pending.pop()
        budget -= 1
        if budget < 0:
            return False
        if type(item) in (list, tuple):
            pending.extend(item)
        elif type(item) is dict:
            if not all(type(key) is str for key in item):
                return False
            pending.extend(item.values())
        elif not (item is None or type(item) in (str, int, float, bool)) or (type(item) is str and len(item) > 100_000):
            return False
    return True


@builder
def frame_(columns: list[Any], index: Any, labels: Any, attrs: dict[str, Any] | None = None) -> Any:
    index, labels = _an_index(index), _an_index(labels)
    check(isinstance(columns, list) and len(columns) == len(labels) and all(len(_column(column)) == len(index) for column in columns),
           "a frame whose columns do not fit its index")
    pandas = _pandas()
    # Each column a series of its own dtype, on a fresh range index: labelled by `index` after, not aligned to it
    # (an index with repeated labels cannot be aligned to).
    made = pandas.DataFrame({at: pandas.Series(column, copy=False, **_its_dtype(column)) for at, column in enumerate(columns)}, copy=False)
    made.index = index
    made.columns = labels
    return _with_attrs(made, attrs)


_UNITS = ("s", "ms", "us", "ns")


@builder
def timestamp_(value: int, unit: str, zone: str | None) -> Any:
    integers(value)
    check(unit in _UNITS, "a time unit that is not one")
    made = _pandas().Timestamp(value, unit=unit)
    return made.tz_localize("UTC").tz_convert(time_zone(zone)) if zone is not None else made


@builder
def time_span_(value: int, unit: str) -> Any:
    integers(value)
    check(unit in _UNITS, "a time unit that is not one")
    return _pandas().Timedelta(value, unit=unit)


@builder
def period_(ordinal: int, frequency: str) -> Any:
    integers(ordinal)
    return _pandas().Period(ordinal=ordinal, freq=short_text(frequency, 32))


@builder
def interval_(left: object, right: object, closed: str) -> Any:
    check(closed in ("left", "right", "both", "neither"), "an interval closed on no known side")
    return _pandas().Interval(left, right, closed=closed)


@builder
def offset_(frequency: str) -> Any:
    from pandas.tseries.frequencies import to_offset

    return to_offset(short_text(frequency, 32))


_OFFSET_KEYWORDS = frozenset({
    "years", "months", "weeks", "days", "hours", "minutes", "seconds", "milliseconds", "microseconds", "nanoseconds",
    "year", "month", "day", "weekday", "hour", "minute", "second", "microsecond", "nanosecond",
})


@builder
def date_offset_(count: int, normalize: bool, keywords: dict[str, int]) -> Any:
    """A calendar offset of its own (`DateOffset(months=1)`), which has no name to cross by."""
    check(isinstance(keywords, dict) and isinstance(normalize, bool) and set(keywords) <= _OFFSET_KEYWORDS, "a date offset with a keyword it does not take")
    integers(count, *keywords.values())
    check(all(abs(number) < 2**63 for number in (count, *keywords.values())), "a date offset's count over 64 bits")
    check(keywords.get("weekday", 0) in range(7), "a date offset's weekday beyond Sunday")
    return _pandas().DateOffset(count, normalize, **keywords)


@builder
def not_a_time_() -> Any:
    return _pandas().NaT


@builder
def missing_() -> Any:
    return _pandas().NA
