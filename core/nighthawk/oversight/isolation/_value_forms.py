"""In an isolated child: the form a value takes to cross to the kernel, as a call of one of the kernel's builders
of data (`_python_values.py`, `_array_values.py`) with plain arguments. A value of no form here is refused in the
child, by name, and the model is told to bind plain data."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import io
import ipaddress
import pathlib
import pickle
import sys
import types
import uuid
from typing import Any

from . import _values  # noqa: F401 - every builder registered
from ._array_values import EXTENSION_DTYPE, checked_frequency, small_metadata
from ._builders import BUILDERS, UnsafeValueError
from ._python_values import FACTORIES, PLAIN, user_class

__all__ = ["dumps_value", "form"]

Form = tuple[str, tuple[Any, ...]]


def dumps_value(value: object) -> bytes:
    """`value` pickled as plain values and the builders' calls (`pickle.PicklingError` naming what is not data)."""
    buffer = io.BytesIO()
    _ValuePickler(buffer, protocol=5).dump(value)
    return buffer.getvalue()


class _ValuePickler(pickle.Pickler):
    def reducer_override(self, obj: object) -> Any:
        if any(obj is builder for builder in BUILDERS.values()):
            return NotImplemented  # saved by name: the kernel's unpickler finds it among the builders
        found = form(obj)
        if found is None:
            raise pickle.PicklingError(f"{type(obj).__module__}.{type(obj).__qualname__} is not data the kernel rebuilds")
        builder, arguments = found
        return BUILDERS[builder], arguments


def form(value: object) -> Form | None:
    """The builder's name and arguments that make `value` again in the kernel, or `None`."""
    for maker in (_pandas, _numpy, _python, _declared):  # pandas' times subclass Python's; numpy's scalars, its numbers
        made = maker(value)
        if made is not None:
            return made
    return None


def _class(value: object) -> tuple[str, str]:
    return type(value).__module__, type(value).__qualname__


def _python(value: object) -> Form | None:
    if isinstance(value, enum.Enum):
        return "enum_", (*_class(value), value.value)
    if isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple):
        if getattr(value, "__dict__", None):  # state beyond its fields (scipy's results) would be lost: a plain tuple
            return "plain_", (tuple(value),)
        return "named_tuple_", (*_class(value), tuple(value))
    if isinstance(value, PLAIN) and not _collection(value):
        base = next(kind for kind in PLAIN if isinstance(value, kind))  # a subclass crosses as its plain kind
        return "plain_", (base(value),)
    match value:
        case complex():
            return "complex_", (value.real, value.imag)
        case range():
            return "range_", (value.start, value.stop, value.step)
        case slice():
            return "slice_", (value.start, value.stop, value.step)
        case _ if value is Ellipsis:
            return "ellipsis_", ()
        case datetime.datetime():
            zone = _zone_key(value.tzinfo)
            return "datetime_", (value.replace(tzinfo=None).isoformat(), zone, *_fold(value))
        case datetime.date():
            return "date_", (value.isoformat(),)
        case datetime.time():
            zone = _zone_key(value.tzinfo)
            return "time_", (value.replace(tzinfo=None).isoformat(), zone, *_fold(value))
        case datetime.timedelta():
            return "timedelta_", (value.days, value.seconds, value.microseconds)
        case datetime.timezone():
            offset = value.utcoffset(None)
            named = value.tzname(None) != datetime.timezone(offset).tzname(None)
            return "timezone_", (offset.total_seconds(), value.tzname(None) if named else None)
        case decimal.Decimal():
            return "decimal_", (str(value),)
        case fractions.Fraction():
            return "fraction_", (value.numerator, value.denominator)
        case uuid.UUID():
            return "uuid_", (value.int,)
        case pathlib.PurePath():
            return "path_", (type(value).__name__, str(value))
        case (ipaddress.IPv4Address() | ipaddress.IPv6Address() | ipaddress.IPv4Network() | ipaddress.IPv6Network()
              | ipaddress.IPv4Interface() | ipaddress.IPv6Interface()):
            return "address_", (type(value).__name__, str(value))
        case collections.OrderedDict():
            return "ordered_dict_", (list(value.items()),)
        case collections.defaultdict():
            names = {factory: name for name, factory in FACTORIES.items()}
            if value.default_factory not in names:
                return "plain_", (dict(value),)  # a factory of its own (a lambda) cannot cross: the mapping does
            return "default_dict_", (names[value.default_factory], list(value.items()))
        case collections.Counter():
            return "counter_", (list(value.items()),)
        case types.SimpleNamespace():
            return "namespace_", (dict(vars(value)),)
        case collections.deque():
            return "deque_", (list(value), value.maxlen)
    return None


def _fold(value: datetime.datetime | datetime.time) -> tuple[int, ...]:
    """The second of two like wall times (a clock set back), which the text does not tell; nothing for the first."""
    return (value.fold,) if value.fold else ()


def _collection(value: object) -> bool:
    """One of the `collections` kinds, which cross as themselves (they subclass dict)."""
    return isinstance(value, (collections.OrderedDict, collections.defaultdict, collections.Counter))


def _zone_key(zone: datetime.tzinfo | None) -> str | None:
    """An aware value's zone as the kernel's `time_zone` reads it: an IANA key (zoneinfo's, pytz's, dateutil's
    file under a `zoneinfo` folder), `UTC`, or a fixed offset as `UTC±hh:mm`; `None` when naive.

    Raises:
        pickle.PicklingError: A zone with no such name (`dateutil.tz.tzlocal()`, a zone of its own).
    """
    if zone is None:
        return None
    key = getattr(zone, "key", None) or getattr(zone, "zone", None)  # zoneinfo's, pytz's
    if isinstance(key, str):
        return key
    path = getattr(zone, "_filename", None)  # dateutil's tzfile
    if isinstance(path, str) and "zoneinfo/" in path:
        return path.rsplit("zoneinfo/", 1)[1]
    offset = zone.utcoffset(None)
    if offset is not None and type(zone).__name__ in ("timezone", "tzutc", "tzoffset", "UTC", "FixedOffset", "StaticTzInfo"):
        if not offset:
            return "UTC"
        sign, offset = ("-", -offset) if offset < datetime.timedelta(0) else ("+", offset)
        hours, rest = divmod(int(offset.total_seconds()), 3600)
        return f"UTC{sign}{hours:02d}:{rest // 60:02d}"
    raise pickle.PicklingError(f"the time zone {zone!r} has no name the kernel can find it by (use a zoneinfo zone)")


def _numpy(value: object) -> Form | None:
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None
    if isinstance(value, numpy.ma.MaskedArray):
        fill = () if value._fill_value is None else (value.fill_value,)  # a default one is the kernel's default too
        return "masked_array_", (numpy.asarray(value.data), numpy.ma.getmaskarray(value), *fill)
    if isinstance(value, numpy.ndarray):
        value = numpy.asarray(value)  # a subclass (a matrix, a memory map) crosses as its data
        if value.dtype == object:
            return "object_array_", (value.shape, list(value.ravel(order="C")))
        if value.dtype.hasobject:
            return None  # a structured array with objects among its fields
        fortran = value.flags.f_contiguous and not value.flags.c_contiguous
        return "array_", (_description(value.dtype), value.shape, fortran, value.tobytes(order="F" if fortran else "C"))
    if isinstance(value, numpy.generic) and not value.dtype.hasobject:
        if value.dtype.itemsize == 0 and value.dtype.kind in "US":  # `np.str_("")`: a dtype of one character holds it
            one = numpy.dtype(f"{value.dtype.kind}1")
            return "scalar_", (one.str, bytes(one.itemsize))
        return "scalar_", (_description(value.dtype), value.tobytes())
    return None


def _description(dtype: Any) -> object:
    return dtype.str if dtype.names is None and dtype.subdtype is None else dtype.descr


def _pandas(value: object) -> Form | None:
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return None
    match value:
        case pandas.DataFrame():
            columns = [_array(value.iloc[:, at].array) for at in range(value.shape[1])]
            return "frame_", (columns, value.index, value.columns, *_attrs(value))
        case pandas.Series():
            return "series_", (_array(value.array), value.index, value.name, *_attrs(value))
        case pandas.RangeIndex():
            return "range_index_", (value.start, value.stop, value.step, value.name)
        case pandas.MultiIndex():
            return "multi_index_", (list(value.levels), list(value.codes), list(value.names))
        case pandas.DatetimeIndex() | pandas.TimedeltaIndex() if _named_frequency(value.freq, len(value)):
            return "index_", (_array(value.array), value.name, value.freqstr)
        case pandas.Index():
            return "index_", (_array(value.array), value.name)
        case pandas.Categorical():
            return "categorical_", (value.codes, value.categories, value.ordered)
        case pandas.arrays.DatetimeArray():
            zone = _zone_key(value.tz)
            naive = value.tz_convert("UTC").tz_localize(None) if zone else value
            return "datetimes_", (naive.to_numpy(), zone)
        case pandas.arrays.IntegerArray() | pandas.arrays.FloatingArray() | pandas.arrays.BooleanArray():
            kind = {"IntegerArray": "integer", "FloatingArray": "floating", "BooleanArray": "boolean"}[type(value).__name__]
            return "masked_", (kind, value._data, value._mask)
        case pandas.arrays.PeriodArray():
            return "periods_", (value.asi8, value.freqstr)
        case pandas.arrays.IntervalArray():
            return "intervals_", (pandas.Index(value.left), pandas.Index(value.right), value.closed)
        case pandas.api.extensions.ExtensionArray() if isinstance(value.dtype, (pandas.StringDtype, pandas.ArrowDtype)) and (
            EXTENSION_DTYPE.fullmatch(str(value.dtype))
        ):
            return "extension_", (str(value.dtype), value.to_numpy(dtype=object, na_value=None).tolist())
        case pandas.api.extensions.ExtensionArray():
            return "object_array_", ((len(value),), value.to_numpy(dtype=object).tolist())
        case pandas.Timestamp():
            zone = _zone_key(value.tz)
            naive = value.tz_convert("UTC").tz_localize(None) if zone else value
            return "timestamp_", (int(naive.asm8.view("i8")), naive.unit, zone)
        case pandas.Timedelta():
            return "time_span_", (int(value.asm8.view("i8")), value.unit)
        case pandas.Period():
            return "period_", (value.ordinal, value.freqstr)
        case pandas.Interval():
            return "interval_", (value.left, value.right, value.closed)
        case pandas.tseries.offsets.BaseOffset() if type(value) is pandas.DateOffset:
            return "date_offset_", (value.n, value.normalize, dict(value.kwds))
        case pandas.tseries.offsets.BaseOffset():
            return "offset_", (value.freqstr,)
    if value is pandas.NaT:
        return "not_a_time_", ()
    if value is pandas.NA:
        return "missing_", ()
    return None


def _attrs(value: Any) -> tuple[dict[str, Any], ...]:
    """A frame's or a series' `attrs`, when they are metadata the kernel takes (else the value crosses without)."""
    return (dict(value.attrs),) if value.attrs and small_metadata(dict(value.attrs)) else ()


def _named_frequency(frequency: Any, times: int) -> bool:
    """A frequency its name makes again (a business day with holidays has a name that drops them; a `DateOffset`
    of its own, none), that the kernel checks `times` against quickly: else the times cross without it."""
    if frequency is None:
        return False
    try:
        return bool(checked_frequency(frequency.freqstr, times) == frequency)
    except (ValueError, UnsafeValueError):
        return False


def _array(values: Any) -> Any:
    """A pandas column's values: the numpy array behind it (times without a zone too), or the pandas array
    itself (formed in turn)."""
    pandas = sys.modules["pandas"]
    arrays = pandas.arrays
    if type(values) in (arrays.NumpyExtensionArray, arrays.TimedeltaArray) or (type(values) is arrays.DatetimeArray and values.tz is None):
        return values.to_numpy()
    return values


def _declared(value: object) -> Form | None:
    """The user's own code's dataclasses, pydantic models and plain classes: their fields."""
    cls = type(value)
    if not user_class(cls):
        return None
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return "instance_", (*_class(value), {**value.__dict__, **(value.__pydantic_extra__ or {})})
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return "instance_", (*_class(value), {field.name: getattr(value, field.name) for field in dataclasses.fields(value)})
    if hasattr(value, "__dict__") and cls.__new__ is object.__new__:
        return "instance_", (*_class(value), dict(vars(value)))
    return None
