"""The kernel's builders of Python's own kinds of data, and of the classes a value may be (enums, named tuples,
dataclasses, pydantic models, the user's own): each checks its arguments (`_builders.py`)."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import ipaddress
import os
import pathlib
import re
import sys
import types
import uuid
from typing import Any

from ._builders import UnsafeValueError, builder, check, integers, short_text

__all__ = ["FACTORIES", "PLAIN", "time_zone", "user_class"]


# --- Python's own kinds ---------------------------------------------------------------------------------------


PLAIN = (bool, int, float, str, bytes, bytearray, list, tuple, dict, set, frozenset)


@builder
def plain_(value: object) -> object:
    """A subclass of a plain kind, as the plain kind (the child sends its plain value)."""
    check(type(value) in PLAIN, "a plain value that is not one")
    return value


@builder
def complex_(real: float, imaginary: float) -> complex:
    check(all(isinstance(part, (int, float)) for part in (real, imaginary)), "a complex number of non-numbers")
    return complex(real, imaginary)


@builder
def range_(start: int, stop: int, step: int) -> range:
    integers(start, stop, step)
    return range(start, stop, step)  # lazy: no size of the child's choosing is made


@builder
def slice_(start: object, stop: object, step: object) -> slice:
    check(all(part is None or (isinstance(part, int) and not isinstance(part, bool)) for part in (start, stop, step)), "a slice of non-integers")
    return slice(start, stop, step)


@builder
def ellipsis_() -> object:
    return ...


@builder
def date_(text: str) -> datetime.date:
    return datetime.date.fromisoformat(short_text(text))


@builder
def time_(text: str, zone: str | None, fold: int = 0) -> datetime.time:
    check(type(fold) is int and fold in (0, 1), "a fold that is neither 0 nor 1")
    value = datetime.time.fromisoformat(short_text(text))
    return value.replace(tzinfo=time_zone(zone) if zone is not None else None, fold=fold)


@builder
def datetime_(text: str, zone: str | None, fold: int = 0) -> datetime.datetime:
    check(type(fold) is int and fold in (0, 1), "a fold that is neither 0 nor 1")
    value = datetime.datetime.fromisoformat(short_text(text))
    return value.replace(tzinfo=time_zone(zone) if zone is not None else None, fold=fold)


@builder
def timedelta_(days: int, seconds: int, microseconds: int) -> datetime.timedelta:
    integers(days, seconds, microseconds)
    return datetime.timedelta(days=days, seconds=seconds, microseconds=microseconds)


@builder
def timezone_(seconds: float, name: str | None) -> datetime.timezone:
    check(isinstance(seconds, (int, float)), "a time zone offset that is not a number")
    offset = datetime.timedelta(seconds=seconds)
    return datetime.timezone(offset) if name is None else datetime.timezone(offset, short_text(name))


_OFFSET_ZONE = re.compile(r"UTC([+-])(\d\d):(\d\d)")


def time_zone(key: object) -> datetime.tzinfo:
    """A time zone by its IANA key (`Europe/Paris`; zoneinfo refuses a path) or a fixed offset (`UTC+01:00`)."""
    key = short_text(key)
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


@builder
def decimal_(text: str) -> decimal.Decimal:
    return decimal.Decimal(short_text(text, 10_000))


@builder
def fraction_(numerator: int, denominator: int) -> fractions.Fraction:
    integers(numerator, denominator)
    return fractions.Fraction(numerator, denominator)


@builder
def uuid_(number: int) -> uuid.UUID:
    integers(number)
    return uuid.UUID(int=number)


_PATHS = {kind.__name__: kind for kind in (pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.PosixPath, pathlib.WindowsPath)}
_ADDRESSES = {kind.__name__: kind for kind in (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network,
                                              ipaddress.IPv6Network, ipaddress.IPv4Interface, ipaddress.IPv6Interface)}


@builder
def path_(kind: str, text: str) -> pathlib.PurePath:
    check(kind in _PATHS and isinstance(text, str), "a path of an unknown kind")
    return _PATHS[kind](text)


@builder
def address_(kind: str, text: str) -> object:
    check(kind in _ADDRESSES, "an address of an unknown kind")
    return _ADDRESSES[kind](short_text(text, 128))


def _fields(fields: object) -> dict[str, object]:
    """Attributes to set on an object the kernel makes: plain names, never one that numpy, pandas or IPython look
    up on the object itself (`__array_interface__` would hand numpy a pointer of the child's choosing,
    `_repr_html_` would be called to show it)."""
    check(isinstance(fields, dict) and all(isinstance(name, str) and name.isidentifier() for name in fields), "fields that are not plain names")
    check(not any(name.startswith(("__", "_repr_", "_ipython_")) for name in fields), "a field named as a protocol")
    return fields  # type: ignore[return-value]


@builder
def namespace_(fields: dict[str, object]) -> types.SimpleNamespace:
    return types.SimpleNamespace(**_fields(fields))


FACTORIES: dict[str | None, Any] = {None: None, "list": list, "dict": dict, "set": set, "int": int, "float": float, "str": str, "tuple": tuple}


@builder
def ordered_dict_(pairs: list[tuple[object, object]]) -> collections.OrderedDict[object, object]:
    return collections.OrderedDict(_pairs(pairs))


@builder
def default_dict_(factory: str | None, pairs: list[tuple[object, object]]) -> collections.defaultdict[object, object]:
    check(factory in FACTORIES, "a defaultdict whose factory is not a plain type")
    return collections.defaultdict(FACTORIES[factory], _pairs(pairs))


@builder
def counter_(pairs: list[tuple[object, object]]) -> collections.Counter[object]:
    return collections.Counter(dict(_pairs(pairs)))


@builder
def deque_(items: list[object], maxlen: int | None) -> collections.deque[object]:
    check(isinstance(items, list) and (maxlen is None or (isinstance(maxlen, int) and maxlen >= 0)), "a deque of the wrong parts")
    return collections.deque(items, maxlen)


def _pairs(pairs: object) -> list[tuple[object, object]]:
    check(isinstance(pairs, list) and all(isinstance(pair, tuple) and len(pair) == 2 for pair in pairs), "a mapping of the wrong parts")
    return pairs  # type: ignore[return-value]


# --- classes: enums, named tuples, dataclasses, pydantic models, the user's own ---------------------------------


def _class(module: str, qualname: str) -> type:
    """The class `module.qualname` as loaded already (nothing is imported), reached through classes only."""
    check(isinstance(module, str) and isinstance(qualname, str) and module in sys.modules, f"a class of a module not loaded ({module!r})")
    found: object = sys.modules[module]
    for part in qualname.split("."):  # through the namespaces themselves: no `__getattr__` of a module is asked
        found = vars(found).get(part) if isinstance(found, (type, types.ModuleType)) else None
    check(isinstance(found, type), f"no class {module}.{qualname} in the kernel (one the model's code defined in the step is not there: bind a dict)")
    cls: type = found  # type: ignore[assignment]
    check(cls.__module__ == module and cls.__qualname__ == qualname, f"{module}.{qualname}, a name for a class defined elsewhere")
    check(module.partition(".")[0] not in ("nighthawk", "nighthawk_ipython"), f"{module}.{qualname}, one of Nighthawk's own classes")
    return cls


@builder
def enum_(module: str, qualname: str, value: object) -> enum.Enum:
    """A member, looked up by its value: one the enum has (no `_missing_` runs), or flags it defines combined."""
    cls = _class(module, qualname)
    check(issubclass(cls, enum.Enum), f"{module}.{qualname} as an enum, which it is not")
    try:
        member = cls._value2member_map_.get(value)
    except TypeError:  # an unhashable value
        member = None
    if member is None and issubclass(cls, enum.Flag) and isinstance(value, int) and not value & ~cls._flag_mask_:
        member = cls(value)  # a combination of its own flags, made as it would be in the kernel
    check(member is not None, f"no {qualname} of the value sent")
    return member  # type: ignore[return-value]


@builder
def named_tuple_(module: str, qualname: str, values: tuple[object, ...]) -> tuple[object, ...]:
    cls = _class(module, qualname)
    check(issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple), f"{module}.{qualname} as a named tuple, which it is not")
    check(isinstance(values, tuple) and len(values) == len(cls._fields), f"a {qualname} of {len(values)} fields")  # type: ignore[attr-defined]
    return tuple.__new__(cls, values)


@builder
def instance_(module: str, qualname: str, fields: dict[str, object]) -> object:
    """An object of a class of the user's own code (a dataclass, a pydantic model, a plain class). A pydantic model
    is validated from its fields (`model_validate`: its validators are the user's code, as in the kernel); any
    other is made without calling its code and given its fields, which a dataclass must have."""
    cls = _class(module, qualname)
    check(user_class(cls), f"{module}.{qualname}, a class of an installed package or of the standard library")
    fields = _fields(fields)
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and issubclass(cls, pydantic.BaseModel):
        try:
            return cls.model_validate(fields, by_name=True)  # fields by their names, aliased ones too (pydantic 2.11)
        except TypeError:
            return cls.model_validate(fields)
    check(cls.__new__ is object.__new__, f"{module}.{qualname}, a class with a `__new__` of its own")
    if dataclasses.is_dataclass(cls):
        check(set(fields) <= {field.name for field in dataclasses.fields(cls)}, f"a {qualname} with fields it does not have")
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


