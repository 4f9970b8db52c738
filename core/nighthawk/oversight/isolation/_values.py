"""How a value crosses from an isolated child to the kernel: as data, never as a program.

A pickle is a small program: it names functions and classes and calls them. The child runs the model's code,
which can write any bytes to the channel, so the kernel cannot let an answer call what it names: two reviews
of an unpickler held to "data classes" found a road to a shell command each time, through numpy's and pandas'
own reconstructors, which call what they are handed. So the child sends every value that is not one of
Python's plain kinds (numbers, text, bytes, lists, tuples, dicts, sets, which pickle writes without naming
anything) as a call of one of the builders below, with plain arguments only: numbers, text, bytes, and
values already built the same way. The kernel's unpickler names nothing else, and never calls a method of
what it built. Each builder checks its arguments and makes its value with the public, validating constructors
(`numpy.frombuffer`, `pandas.Categorical.from_codes`, `pandas.MultiIndex(verify_integrity=True)`), so that no
size, shape, code or time zone of the child's choosing makes the kernel allocate, read, crash or run code.

What comes back: Python's numbers, text, containers, dates and times, decimals, fractions, UUIDs, paths and
addresses; numpy arrays (of objects too), scalars and masked arrays; pandas frames, series, indexes (ranges,
multi-level ones), categorical, time-zone, nullable, string, period and interval arrays, and time values;
enum members and named tuples; dataclasses, pydantic models and the plain classes of the user's own code,
rebuilt from their fields without calling their code. Anything else is refused in the child, by name (`_value_forms.py`).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import io
import ipaddress
import math
import os
import pathlib
import pickle
import re
import sys
import types
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["BUILDERS", "UnsafeValueError", "unpickle_data", "user_class"]


class UnsafeValueError(pickle.UnpicklingError):
    """The child's answer is not data the kernel rebuilds (it names something else, or its parts do not fit)."""


BUILDERS: dict[str, Callable[..., Any]] = {}
"""The kernel's builders of data by name: all an answer may name or call (`_value_forms.py` picks one a value)."""


def _builder(function: Callable[..., Any]) -> Callable[..., Any]:
    BUILDERS[function.__name__] = function
    return function


def unpickle_data(data: bytes) -> Any:
    """Unpickle what the isolated child sent: plain values, and the builders' calls only."""
    try:
        return _DataUnpickler(io.BytesIO(data)).load()
    except UnsafeValueError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, decimal.InvalidOperation, AttributeError) as exc:
        raise UnsafeValueError(f"the isolated child's answer does not hold together: {type(exc).__name__}: {exc}") from exc


class _DataUnpickler(pickle._Unpickler):  # type: ignore[name-defined]
    """Python's own unpickler with every opcode that names or calls something held to the builders, and the
    ones that build an object or set its state (`NEWOBJ`, `BUILD`, `INST`, `OBJ`, extensions) refused."""

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name in BUILDERS:
            return BUILDERS[name]
        raise UnsafeValueError(f"the isolated child's answer names {module}.{name}, which is not one of the kernel's builders of data")

    def load_reduce(self) -> None:
        if self.stack[-2] not in BUILDERS.values() or not isinstance(self.stack[-1], tuple):
            raise UnsafeValueError(f"the isolated child's answer calls {self.stack[-2]!r:.100}, which is not one of the kernel's builders of data")
        super().load_reduce()

    def load_refused(self) -> None:
        raise UnsafeValueError("the isolated child's answer builds an object or sets its state directly; the kernel builds data only")

    for _opcode in (pickle.NEWOBJ, pickle.NEWOBJ_EX, pickle.BUILD, pickle.INST, pickle.OBJ, pickle.EXT1, pickle.EXT2, pickle.EXT4,
                    pickle.PERSID, pickle.BINPERSID):
        dispatch[_opcode[0]] = load_refused
    dispatch[pickle.REDUCE[0]] = load_reduce


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise UnsafeValueError(f"the isolated child's answer holds {what}")


def _text(value: object, limit: int = 64) -> str:
    _check(isinstance(value, str) and len(value) <= limit, f"a name or text over {limit} characters where a short one belongs")
    return value  # type: ignore[return-value]


def _integers(*values: object) -> None:
    _check(all(isinstance(value, int) and not isinstance(value, bool) for value in values), "a non-integer where integers belong")


# --- Python's own kinds ---------------------------------------------------------------------------------------


_PLAIN = (bool, int, float, str, bytes, bytearray, list, tuple, dict, set, frozenset)


@_builder
def plain_(value: object) -> object:
    """A subclass of a plain kind, as the plain kind (the child sends its plain value)."""
    _check(type(value) in _PLAIN, "a plain value that is not one")
    return value


@_builder
def complex_(real: float, imaginary: float) -> complex:
    _check(all(isinstance(part, (int, float)) for part in (real, imaginary)), "a complex number of non-numbers")
    return complex(real, imaginary)


@_builder
def range_(start: int, stop: int, step: int) -> range:
    _integers(start, stop, step)
    return range(start, stop, step)  # lazy: no size of the child's choosing is made


@_builder
def slice_(start: object, stop: object, step: object) -> slice:
    _check(all(part is None or (isinstance(part, int) and not isinstance(part, bool)) for part in (start, stop, step)), "a slice of non-integers")
    return slice(start, stop, step)


@_builder
def ellipsis_() -> object:
    return ...


@_builder
def date_(text: str) -> datetime.date:
    return datetime.date.fromisoformat(_text(text))


@_builder
def time_(text: str, zone: str | None) -> datetime.time:
    value = datetime.time.fromisoformat(_text(text))
    return value.replace(tzinfo=_zone(zone)) if zone is not None else value


@_builder
def datetime_(text: str, zone: str | None) -> datetime.datetime:
    value = datetime.datetime.fromisoformat(_text(text))
    return value.replace(tzinfo=_zone(zone)) if zone is not None else value


@_builder
def timedelta_(days: int, seconds: int, microseconds: int) -> datetime.timedelta:
    _integers(days, seconds, microseconds)
    return datetime.timedelta(days=days, seconds=seconds, microseconds=microseconds)


@_builder
def timezone_(seconds: float, name: str | None) -> datetime.timezone:
    _check(isinstance(seconds, (int, float)), "a time zone offset that is not a number")
    offset = datetime.timedelta(seconds=seconds)
    return datetime.timezone(offset) if name is None else datetime.timezone(offset, _text(name))


_OFFSET_ZONE = re.compile(r"UTC([+-])(\d\d):(\d\d)")


def _zone(key: object) -> datetime.tzinfo:
    """A time zone by its IANA key (`Europe/Paris`; zoneinfo refuses a path) or a fixed offset (`UTC+01:00`)."""
    key = _text(key)
    if key == "UTC":
        return datetime.timezone.utc
    if (fixed := _OFFSET_ZONE.fullmatch(key)) is not None:
        sign = -1 if fixed.group(1) == "-" else 1
        return datetime.timezone(sign * datetime.timedelta(hours=int(fixed.group(2)), minutes=int(fixed.group(3))))
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(key)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError) as exc:
        raise UnsafeValueError(f"the isolated child's answer names the time zone {key!r}, which is not one: {exc}") from exc


@_builder
def decimal_(text: str) -> decimal.Decimal:
    return decimal.Decimal(_text(text, 10_000))


@_builder
def fraction_(numerator: int, denominator: int) -> fractions.Fraction:
    _integers(numerator, denominator)
    return fractions.Fraction(numerator, denominator)


@_builder
def uuid_(number: int) -> uuid.UUID:
    _integers(number)
    return uuid.UUID(int=number)


_PATHS = {kind.__name__: kind for kind in (pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.PosixPath, pathlib.WindowsPath)}
_ADDRESSES = {kind.__name__: kind for kind in (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network,
                                              ipaddress.IPv6Network, ipaddress.IPv4Interface, ipaddress.IPv6Interface)}


@_builder
def path_(kind: str, text: str) -> pathlib.PurePath:
    _check(kind in _PATHS and isinstance(text, str), "a path of an unknown kind")
    return _PATHS[kind](text)


@_builder
def address_(kind: str, text: str) -> object:
    _check(kind in _ADDRESSES, "an address of an unknown kind")
    return _ADDRESSES[kind](_text(text, 128))


@_builder
def namespace_(fields: dict[str, object]) -> types.SimpleNamespace:
    _check(isinstance(fields, dict) and all(isinstance(name, str) for name in fields), "a namespace of the wrong parts")
    return types.SimpleNamespace(**fields)


_FACTORIES: dict[str | None, Any] = {None: None, "list": list, "dict": dict, "set": set, "int": int, "float": float, "str": str, "tuple": tuple}


@_builder
def ordered_dict_(pairs: list[tuple[object, object]]) -> collections.OrderedDict[object, object]:
    return collections.OrderedDict(_pairs(pairs))


@_builder
def default_dict_(factory: str | None, pairs: list[tuple[object, object]]) -> collections.defaultdict[object, object]:
    _check(factory in _FACTORIES, "a defaultdict whose factory is not a plain type")
    return collections.defaultdict(_FACTORIES[factory], _pairs(pairs))


@_builder
def counter_(pairs: list[tuple[object, object]]) -> collections.Counter[object]:
    return collections.Counter(dict(_pairs(pairs)))


@_builder
def deque_(items: list[object], maxlen: int | None) -> collections.deque[object]:
    _check(isinstance(items, list) and (maxlen is None or (isinstance(maxlen, int) and maxlen >= 0)), "a deque of the wrong parts")
    return collections.deque(items, maxlen)


def _pairs(pairs: object) -> list[tuple[object, object]]:
    _check(isinstance(pairs, list) and all(isinstance(pair, tuple) and len(pair) == 2 for pair in pairs), "a mapping of the wrong parts")
    return pairs  # type: ignore[return-value]


# --- classes: enums, named tuples, dataclasses, pydantic models, the user's own ---------------------------------


def _class(module: str, qualname: str) -> type:
    """The class `module.qualname` as loaded already (nothing is imported), reached through classes only."""
    _check(isinstance(module, str) and isinstance(qualname, str) and module in sys.modules, f"a class of a module not loaded ({module!r})")
    found: object = sys.modules[module]
    for part in qualname.split("."):  # through the namespaces themselves: no `__getattr__` of a module is asked
        found = vars(found).get(part) if isinstance(found, (type, types.ModuleType)) else None
    _check(isinstance(found, type), f"no class {module}.{qualname}")
    cls: type = found  # type: ignore[assignment]
    _check(cls.__module__ == module and cls.__qualname__ == qualname, f"{module}.{qualname}, a name for a class defined elsewhere")
    _check(module.partition(".")[0] not in ("nighthawk", "nighthawk_ipython"), f"{module}.{qualname}, one of Nighthawk's own classes")
    return cls


@_builder
def enum_(module: str, qualname: str, value: object) -> enum.Enum:
    cls = _class(module, qualname)
    _check(issubclass(cls, enum.Enum), f"{module}.{qualname} as an enum, which it is not")
    return cls(value)  # a member looked up by its value


@_builder
def named_tuple_(module: str, qualname: str, values: tuple[object, ...]) -> tuple[object, ...]:
    cls = _class(module, qualname)
    _check(issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple), f"{module}.{qualname} as a named tuple, which it is not")
    _check(isinstance(values, tuple) and len(values) == len(cls._fields), f"a {qualname} of {len(values)} fields")  # type: ignore[attr-defined]
    return tuple.__new__(cls, values)


@_builder
def instance_(module: str, qualname: str, fields: dict[str, object]) -> object:
    """A dataclass, a pydantic model or a plain class of the user's own code, made without calling its code and
    given its fields (a pydantic model through `model_construct`, which validates nothing: the step validates)."""
    cls = _class(module, qualname)
    _check(isinstance(fields, dict) and all(isinstance(name, str) and name.isidentifier() and not name.startswith("__") for name in fields),
           "fields that are not plain names")
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and issubclass(cls, pydantic.BaseModel):
        return cls.model_construct(**fields)
    _check(cls.__new__ is object.__new__, f"{module}.{qualname}, a class with a `__new__` of its own")
    if dataclasses.is_dataclass(cls):
        _check(set(fields) <= {field.name for field in dataclasses.fields(cls)}, f"a {qualname} with fields it does not have")
    else:
        _check(user_class(cls), f"{module}.{qualname}, a class of an installed package or of the standard library")
    made = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(made, name, value)
    return made


def user_class(cls: type) -> bool:
    """A class of the user's own code: the notebook's, or a module outside the standard library and every
    `site-packages` folder (the notebook's neighbours, an editable install), and not Nighthawk's."""
    module = cls.__module__
    root = module.partition(".")[0]
    if root == "__main__":
        return True
    if root in sys.stdlib_module_names or root.startswith("_") or root in ("nighthawk", "nighthawk_ipython"):
        return False
    path = getattr(sys.modules.get(module), "__file__", None)
    parts = os.path.normpath(path).split(os.sep) if path else ["site-packages"]
    return "site-packages" not in parts and "dist-packages" not in parts


# --- numpy -------------------------------------------------------------------------------------------------------


def _plain_dtype(description: object) -> Any:
    import numpy

    _check(isinstance(description, (str, list)), "a dtype described by something else than text or fields")
    dtype = numpy.dtype(description if isinstance(description, str) else [tuple(field) for field in description])
    _check(not dtype.hasobject, "a dtype of raw bytes that holds objects")
    return dtype


def _shape(shape: object) -> tuple[int, ...]:
    _check(isinstance(shape, tuple) and all(isinstance(side, int) and side >= 0 for side in shape), "an array shape that is not one")
    return shape  # type: ignore[return-value]


@_builder
def array_(description: object, shape: tuple[int, ...], fortran: bool, data: bytes) -> Any:
    import numpy

    dtype, shape = _plain_dtype(description), _shape(shape)
    _check(isinstance(data, (bytes, bytearray)) and math.prod(shape) * dtype.itemsize == len(data), "an array whose bytes do not fill its shape")
    return numpy.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy(order="K")


@_builder
def object_array_(shape: tuple[int, ...], items: list[object]) -> Any:
    import numpy

    shape = _shape(shape)
    _check(isinstance(items, list) and len(items) == math.prod(shape), "an array whose items do not fill its shape")
    made = numpy.empty(len(items), dtype=object)
    for at, item in enumerate(items):  # one by one: a list item assigned as a slice would be spread over the array
        made[at] = item
    return made.reshape(shape)


@_builder
def scalar_(description: object, data: bytes) -> Any:
    import numpy

    dtype = _plain_dtype(description)
    _check(isinstance(data, bytes) and len(data) == dtype.itemsize, "a numpy scalar of the wrong size")
    return numpy.frombuffer(data, dtype=dtype)[0]


@_builder
def masked_array_(data: Any, mask: Any) -> Any:
    import numpy

    _check(type(data) is numpy.ndarray and type(mask) is numpy.ndarray and mask.dtype == bool and mask.shape == data.shape, "a masked array of the wrong parts")
    return numpy.ma.MaskedArray(data, mask=mask)


# --- pandas ------------------------------------------------------------------------------------------------------


def _pandas() -> Any:
    import pandas

    return pandas


def _ndarray(value: object, kinds: str) -> Any:
    import numpy

    _check(type(value) is numpy.ndarray and value.ndim == 1 and value.dtype.kind in kinds, f"a column of dtype kind outside {kinds!r}")
    return value


@_builder
def categorical_(codes: Any, categories: Any, ordered: bool) -> Any:
    pandas = _pandas()
    _check(isinstance(categories, pandas.Index) and isinstance(ordered, bool), "a categorical of the wrong parts")
    return pandas.Categorical.from_codes(_ndarray(codes, "iu"), dtype=pandas.CategoricalDtype(categories, ordered=ordered))


@_builder
def datetimes_(values: Any, zone: str | None) -> Any:
    pandas = _pandas()
    made = pandas.DatetimeIndex(_ndarray(values, "M"))
    return (made.tz_localize("UTC").tz_convert(_zone(zone)) if zone is not None else made).array


_MASKED = {"integer": ("iu", "IntegerArray"), "floating": ("f", "FloatingArray"), "boolean": ("b", "BooleanArray")}


@_builder
def masked_(kind: str, values: Any, mask: Any) -> Any:
    _check(kind in _MASKED, "a nullable array of an unknown kind")
    kinds, name = _MASKED[kind]
    values, mask = _ndarray(values, kinds), _ndarray(mask, "b")
    _check(len(values) == len(mask), "a nullable array whose mask does not fit")
    return getattr(_pandas().arrays, name)(values, mask)


_EXTENSION_DTYPE = re.compile(r"(string|str|string\[python\]|string\[pyarrow\]|[a-z0-9_]+(\[[a-z0-9_, :]+\])?\[pyarrow\])")


@_builder
def extension_(dtype: str, items: list[object]) -> Any:
    _check(_EXTENSION_DTYPE.fullmatch(_text(dtype)) is not None and isinstance(items, list), f"an array of the dtype {dtype!r}")
    return _pandas().array(items, dtype=dtype)


@_builder
def periods_(ordinals: Any, frequency: str) -> Any:
    pandas = _pandas()
    return pandas.arrays.PeriodArray(_ndarray(ordinals, "i").astype("int64"), dtype=pandas.PeriodDtype(_text(frequency, 32)))


@_builder
def intervals_(left: Any, right: Any, closed: str) -> Any:
    pandas = _pandas()
    _check(closed in ("left", "right", "both", "neither") and all(isinstance(side, pandas.Index) for side in (left, right)), "intervals of the wrong parts")
    return pandas.arrays.IntervalArray.from_arrays(left, right, closed=closed)


def _column(value: object) -> Any:
    """A frame's column, a series' or an index's values: an array a builder made (numpy's or pandas')."""
    import numpy

    pandas = _pandas()
    _check(type(value) is numpy.ndarray and value.ndim == 1 or isinstance(value, pandas.api.extensions.ExtensionArray), "a column that is not an array")
    return value


@_builder
def index_(values: Any, name: object) -> Any:
    return _pandas().Index(_column(values), name=name, tupleize_cols=False, copy=False)


@_builder
def range_index_(start: int, stop: int, step: int, name: object) -> Any:
    _integers(start, stop, step)
    return _pandas().RangeIndex(start, stop, step, name=name)


@_builder
def multi_index_(levels: list[Any], codes: list[Any], names: list[object]) -> Any:
    pandas = _pandas()
    _check(isinstance(levels, list) and isinstance(codes, list) and isinstance(names, list) and len(levels) == len(codes) == len(names)
           and all(isinstance(level, pandas.Index) for level in levels), "a multi-level index of the wrong parts")
    return pandas.MultiIndex(levels=levels, codes=[_ndarray(code, "iu") for code in codes], names=names, verify_integrity=True)


def _an_index(value: object) -> Any:
    _check(isinstance(value, _pandas().Index), "an index that is not one")
    return value


@_builder
def series_(values: Any, index: Any, name: object) -> Any:
    values, index = _column(values), _an_index(index)
    _check(len(values) == len(index), "a series whose index does not fit its values")
    return _pandas().Series(values, index=index, name=name, copy=False)


@_builder
def frame_(columns: list[Any], index: Any, labels: Any) -> Any:
    index, labels = _an_index(index), _an_index(labels)
    _check(isinstance(columns, list) and len(columns) == len(labels) and all(len(_column(column)) == len(index) for column in columns),
           "a frame whose columns do not fit its index")
    made = _pandas().DataFrame(dict(enumerate(columns)), index=index, copy=False) if columns else _pandas().DataFrame(index=index)
    made.columns = labels
    return made


_UNITS = ("s", "ms", "us", "ns")


@_builder
def timestamp_(value: int, unit: str, zone: str | None) -> Any:
    _integers(value)
    _check(unit in _UNITS, "a time unit that is not one")
    made = _pandas().Timestamp(value, unit=unit)
    return made.tz_localize("UTC").tz_convert(_zone(zone)) if zone is not None else made


@_builder
def time_span_(value: int, unit: str) -> Any:
    _integers(value)
    _check(unit in _UNITS, "a time unit that is not one")
    return _pandas().Timedelta(value, unit=unit)


@_builder
def period_(ordinal: int, frequency: str) -> Any:
    _integers(ordinal)
    return _pandas().Period(ordinal=ordinal, freq=_text(frequency, 32))


@_builder
def interval_(left: object, right: object, closed: str) -> Any:
    _check(closed in ("left", "right", "both", "neither"), "an interval closed on no known side")
    return _pandas().Interval(left, right, closed=closed)


@_builder
def offset_(frequency: str) -> Any:
    from pandas.tseries.frequencies import to_offset

    return to_offset(_text(frequency, 32))


@_builder
def not_a_time_() -> Any:
    return _pandas().NaT


@_builder
def missing_() -> Any:
    return _pandas().NA
