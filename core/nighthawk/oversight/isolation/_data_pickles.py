"""The unpickler the kernel reads an isolated child's answers with: it rebuilds data, and nothing that acts.

The child runs untrusted code, so its answers are untrusted too, and a pickle is a small program: it names
classes and functions and calls them. Python's own unpickler would call whatever the bytes name, in the
kernel. This one follows what the pickles of data do, and refuses every other road:

- **Which classes.** Plain data by name (Python's containers, numbers, dates, decimals, paths, ...), numpy
  arrays, scalars and dtypes, pandas' frames, series, indexes, arrays, dtypes and time values, and declared
  data anywhere (dataclasses, pydantic models, attrs classes, named tuples, enums); any other class only if
  it is the user's own code (defined in the notebook, or in a module outside the standard library and the
  installed packages). Not an iterator that calls what it is given (`map`), not a file, a process, a parser
  of code (`pandas.core.computation`). A class is judged by where it is defined, not by the name the pickle
  gives it.
- **Which calls.** A call (`REDUCE`) only of a data class or of a function that numpy's or pandas' pickles use
  to rebuild a value, with arguments checked where the call could grow from a few bytes to gigabytes
  (`bytes(10**10)`, an array of a shape it chooses) or compute for hours (`Fraction("1e1000000000")`).
- **What state.** `BUILD` sets the state of an object the pickle made, never of a class, a module or a
  function (which would change the kernel's own code for every later step); a numpy dtype's state must not
  claim fewer objects than its fields hold (else raw bytes would be read as pointers: a crash, or worse).
"""

from __future__ import annotations

import dataclasses
import enum
import io
import os
import pickle
import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["UnsafeValueError", "unpickle_data"]


class UnsafeValueError(pickle.UnpicklingError):
    """The child's answer names a class or a call the kernel will not make to rebuild it."""


def unpickle_data(data: bytes) -> Any:
    """Unpickle what the isolated child sent, rebuilding data only (`UnsafeValueError` otherwise)."""
    return _DataUnpickler(io.BytesIO(data)).load()


# --- which classes ----------------------------------------------------------------------------------------

_PLAIN = frozenset({
    "builtins.int", "builtins.float", "builtins.complex", "builtins.bool", "builtins.str", "builtins.bytes",
    "builtins.bytearray", "builtins.list", "builtins.tuple", "builtins.dict", "builtins.set", "builtins.frozenset",
    "builtins.slice", "builtins.range", "builtins.NoneType", "builtins.ellipsis",
    "collections.OrderedDict", "collections.defaultdict", "collections.deque", "collections.Counter",
    "datetime.date", "datetime.time", "datetime.datetime", "datetime.timedelta", "datetime.timezone", "datetime.tzinfo",
    "decimal.Decimal", "fractions.Fraction", "uuid.UUID", "zoneinfo.ZoneInfo", "types.SimpleNamespace",
    "ipaddress.IPv4Address", "ipaddress.IPv6Address", "ipaddress.IPv4Network", "ipaddress.IPv6Network",
    "ipaddress.IPv4Interface", "ipaddress.IPv6Interface",
})
"""Python's own data classes, by where they are defined."""
_CONSTANTS = frozenset({"builtins.Ellipsis", "builtins.NotImplemented", "pandas.NA", "pandas._libs.missing.NA"})
_PANDAS_DATA = ("pandas.core.frame", "pandas.core.series", "pandas.core.generic", "pandas.core.flags", "pandas.core.indexes.",
                "pandas.core.arrays.", "pandas.core.dtypes.", "pandas.core.internals.", "pandas.core.sparse.",
                "pandas._libs.tslibs.", "pandas._libs.internals", "pandas._libs.arrays", "pandas._libs.missing",
                "pandas._libs.sparse", "pandas._libs.interval")
"""The pandas modules of data (values, their arrays, dtypes, blocks and indexes, time values, offsets); not its
readers and writers (`pandas.io`, `pandas._libs.parsers`), its expression parser, its plotting."""
_PANDAS_VALUES = ("core.generic.NDFrame", "Index", "api.extensions.ExtensionArray", "api.extensions.ExtensionDtype",
                  "_libs.tslibs.offsets.BaseOffset", "Period", "Interval", "Timestamp", "Timedelta", "Flags",
                  "_libs.tslibs.nattype.NaTType", "_libs.missing.NAType")
"""The pandas classes whose subclasses are values, by their path from `pandas`: pandas names its public classes
as its top module's (`pandas.DataFrame`, but also `pandas.HDFStore`, which opens a file), so where a class
says it is defined does not tell data from the rest."""
_PANDAS_NOT_CALLED = ("core.generic.NDFrame", "Index", "api.extensions.ExtensionArray")
"""pandas classes its pickles never call (they are made empty and given their state): called with the child's
arguments, a frame, a series, an index or an array could be asked for billions of rows by a few bytes
(`range(10**10)`)."""
_OWN = ("nighthawk", "nighthawk_ipython")


def _defined_as(found: object) -> str:
    return f"{getattr(found, '__module__', '')}.{getattr(found, '__qualname__', '')}"


def is_data_class(found: type) -> bool:
    """A class the kernel may rebuild from the child's answer."""
    qualified, module = _defined_as(found), getattr(found, "__module__", "") or ""
    root = module.partition(".")[0]
    if qualified in _PLAIN or (root == "pathlib" and issubclass(found, sys.modules["pathlib"].PurePath)):
        return True  # (pathlib's classes moved to `pathlib._local` in Python 3.13)
    if issubclass(found, (BaseException, io.IOBase, types.ModuleType, type)) or root in _OWN:
        return False
    if root == "numpy":
        return _numpy_data(found)
    if root == "pandas":
        return module.startswith(_PANDAS_DATA) or issubclass(found, _pandas_classes(_PANDAS_VALUES))
    if root == "pyarrow":
        return _arrow_data(found)
    if _declared_data(found):
        return root not in sys.stdlib_module_names or issubclass(found, enum.Enum)
    return root == "__main__" or _users_own(module)


def _pandas_classes(paths: tuple[str, ...]) -> tuple[type, ...]:
    """The pandas classes at `paths` that this version of pandas has."""
    found = []
    for path in paths:
        value: object = sys.modules["pandas"]
        for part in path.split("."):
            value = getattr(value, part, None)
        if isinstance(value, type):
            found.append(value)
    return tuple(found)


def _numpy_data(found: type) -> bool:
    numpy = sys.modules["numpy"]
    return issubclass(found, (numpy.generic, numpy.dtype)) or (
        issubclass(found, numpy.ndarray) and not issubclass(found, numpy.memmap)
    )


def _arrow_data(found: type) -> bool:
    arrow = sys.modules.get("pyarrow.lib")
    kinds = tuple(getattr(arrow, name) for name in ("Array", "ChunkedArray", "DataType", "Scalar") if hasattr(arrow, name))
    return bool(kinds) and issubclass(found, kinds)


def _declared_data(found: type) -> bool:
    """Dataclasses, pydantic models, attrs classes, named tuples and enums: classes whose state is their data."""
    pydantic = sys.modules.get("pydantic")
    return (
        dataclasses.is_dataclass(found)
        or (pydantic is not None and issubclass(found, pydantic.BaseModel))
        or hasattr(found, "__attrs_attrs__")
        or (issubclass(found, tuple) and hasattr(found, "_fields"))
        or issubclass(found, enum.Enum)
    )


def _users_own(module: str) -> bool:
    """Whether `module` is the user's own code: not the standard library's, not an installed package's (a
    module outside every `site-packages` folder: the notebook's neighbours, an editable install)."""
    if module.partition(".")[0] in sys.stdlib_module_names or module.startswith("_"):
        return False
    path = getattr(sys.modules.get(module), "__file__", None)
    if not path:
        return False
    parts = os.path.normpath(path).split(os.sep)
    return "site-packages" not in parts and "dist-packages" not in parts


# --- which calls --------------------------------------------------------------------------------------------


def _sized(*arguments: object) -> bool:
    """No argument is a bare integer (a size to allocate): the pickles of data pass contents, not sizes."""
    return not any(isinstance(argument, int) and not isinstance(argument, bool) for argument in arguments)


def _numbers(*arguments: object) -> bool:
    return all(isinstance(argument, (int, float)) or argument is None for argument in arguments)


def _no_objects(dtype: object) -> bool:
    return not getattr(dtype, "hasobject", True)


def _as_numpy_pickles_it(arguments: tuple[Any, ...]) -> bool:
    """numpy's `_reconstruct(cls, shape, dtype)` (and `_mareconstruct`): always an empty `(0,)` array of bytes,
    which the state then fills; another shape would be an allocation of the child's choosing."""
    return len(arguments) >= 3 and tuple(arguments[-2]) == (0,) and arguments[-1] in (b"b", "b")


_CALLS: dict[str, Callable[[tuple[Any, ...]], bool]] = {
    "builtins.complex": lambda a: _numbers(*a),
    "builtins.slice": lambda a: _numbers(*a),
    "builtins.range": lambda a: _numbers(*a),
    "builtins.set": lambda a: _sized(*a),
    "builtins.frozenset": lambda a: _sized(*a),
    "builtins.bytearray": lambda a: _sized(*a),
    "collections.OrderedDict": lambda a: _sized(*a),
    "collections.Counter": lambda a: _sized(*a),
    "collections.deque": lambda a: len(a) < 1 or _sized(a[0]),
    "collections.defaultdict": lambda a: not a or a[0] is None or (isinstance(a[0], type) and is_data_class(a[0])),
    "fractions.Fraction": lambda a: all(isinstance(part, int) for part in a),
    "numpy._core.multiarray._reconstruct": _as_numpy_pickles_it,
    "numpy.core.multiarray._reconstruct": _as_numpy_pickles_it,
    "numpy.ma.core._mareconstruct": _as_numpy_pickles_it,
    "numpy._core.multiarray.scalar": lambda a: bool(a) and (_no_objects(a[0]) or not isinstance(a[-1], (bytes, bytearray))),
    "numpy.core.multiarray.scalar": lambda a: bool(a) and (_no_objects(a[0]) or not isinstance(a[-1], (bytes, bytearray))),
    "numpy._core.numeric._frombuffer": lambda a: len(a) > 1 and _no_objects(a[1]),
    "numpy.core.numeric._frombuffer": lambda a: len(a) > 1 and _no_objects(a[1]),
    "builtins.getattr": lambda a: len(a) == 2 and _defined_as(a[0]) == "zoneinfo.ZoneInfo" and a[1] == "_unpickle",
}
"""Calls a pickle of data makes, each with what its arguments must be. The data classes not named here that
Python's, numpy's and pandas' pickles call may be called with anything that makes no more than the message
holds (`_may_make`)."""
_RECONSTRUCTORS = frozenset({
    "copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__",
    "numpy._core.multiarray._reconstruct", "numpy.core.multiarray._reconstruct", "numpy._core.multiarray.scalar",
    "numpy.core.multiarray.scalar", "numpy._core.numeric._frombuffer", "numpy.core.numeric._frombuffer", "numpy.ma.core._mareconstruct",
    "pandas._libs.internals._unpickle_block", "pandas.core.internals.blocks.new_block",
    "pandas.core.indexes.base._new_Index", "pandas._libs.tslibs.timestamps._unpickle_timestamp",
    "pandas._libs.tslibs.timedeltas._timedelta_unpickle", "pandas._libs.tslibs.nattype.__nat_unpickle",
    "pandas.core.arrays.categorical._unpickle_categorical", "pandas._libs.arrays.__pyx_unpickle_NDArrayBacked",
    "pandas._libs.tslibs.offsets._unpickle", "pandas.core.internals.managers._unpickle_block",
    "pandas.core.arrays.period._unpickle_period_array", "pandas.core.indexes.datetimes._new_DatetimeIndex",
    "pandas.core.indexes.period._new_PeriodIndex", "pandas.core.indexes.interval._new_IntervalIndex",
    "pandas.core.indexes.timedeltas._new_TimedeltaIndex",
    "pandas._libs.tslibs.nattype._nat_unpickle", "pyarrow.lib._restore_array", "pyarrow.lib.type_for_alias",
    "pyarrow.lib.py_buffer", "pyarrow.lib.large_string", "pyarrow.lib.string", "builtins.getattr",
})
"""Functions the pickles of data call to rebuild a value (they make the value and nothing else)."""
_CLASS_TAKING = frozenset({"copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__",
                           "pandas.core.indexes.base._new_Index", "pandas._libs.arrays.__pyx_unpickle_NDArrayBacked"})
"""Reconstructors whose first argument is the class they build: a data class too."""


def _may_call(called: object, arguments: object) -> bool:
    if not isinstance(arguments, tuple):
        return False
    name = _defined_as(called)
    if _zone_unpickler(called):  # what `getattr(ZoneInfo, "_unpickle")` gave: a zone looked up by its key
        return len(arguments) == 2 and isinstance(arguments[0], str) and isinstance(arguments[1], int)
    if name in _RECONSTRUCTORS:
        if name in _CLASS_TAKING and not (arguments and isinstance(arguments[0], type) and is_data_class(arguments[0])):
            return False
        if name == "copyreg._reconstructor" and not _plain_base(arguments):
            return False
        if name in {"copyreg.__newobj__", "copyreg.__newobj_ex__"} and not _may_make(arguments[0], arguments[1:]):
            return False
        return _CALLS.get(name, lambda _: True)(arguments)
    if not isinstance(called, type) or not is_data_class(called):
        return False
    if issubclass(called, enum.Enum):
        return True  # a member looked up by its value
    if not _called_by_its_pickles(called):
        return False  # the user's own classes are rebuilt from their state, never called with the child's arguments
    return _may_make(called, arguments) and _CALLS.get(name, lambda _: True)(arguments)


def _called_by_its_pickles(cls: type) -> bool:
    """Whether the pickles of `cls`'s values call it: Python's data classes, numpy's dtypes, pandas' dtypes, time
    values, offsets and block managers."""
    module = cls.__module__
    if module.partition(".")[0] in {"builtins", "collections", "datetime", "decimal", "fractions", "uuid", "types", "pathlib", "ipaddress"}:
        return True
    numpy = sys.modules.get("numpy")
    if numpy is not None and issubclass(cls, numpy.dtype):
        return True
    return module.partition(".")[0] == "pandas" and not issubclass(cls, _pandas_classes(_PANDAS_NOT_CALLED))


def _zone_unpickler(called: object) -> bool:
    zoneinfo = sys.modules.get("zoneinfo")
    return zoneinfo is not None and getattr(called, "__self__", None) is zoneinfo.ZoneInfo and getattr(called, "__name__", "") == "_unpickle"


def _may_make(cls: object, arguments: tuple[Any, ...]) -> bool:
    """Whether `cls.__new__(cls, *arguments)` (or `cls(*arguments)`) makes a value of the size the message holds."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(cls, type) and issubclass(cls, (numpy.ndarray, numpy.void)):
        return not arguments  # numpy's own pickles make arrays through `_reconstruct`, never with a shape
    if isinstance(cls, type) and issubclass(cls, (bytes, bytearray)):
        return _sized(*arguments)
    return True


def _plain_base(arguments: tuple[Any, ...]) -> bool:
    """`_reconstructor(cls, base, state)` calls `base.__init__(obj, state)`: only `object` or a builtin data type."""
    base = arguments[1] if len(arguments) > 1 else None
    return base is object or (isinstance(base, type) and base.__module__ == "builtins" and is_data_class(base))


# --- the unpickler ------------------------------------------------------------------------------------------

_NUMPY_OBJECT_FLAGS = 0x01 | 0x02 | 0x04 | 0x08 | 0x10
"""The flags of a numpy dtype that say it holds Python objects (counted references, pickled as a list, ...)."""


class _DataUnpickler(pickle._Unpickler):  # type: ignore[name-defined]
    """Python's own unpickler (the C one cannot be told which calls to refuse), held to data. The old opcodes
    that call a class by another road (`INST`, `OBJ`) are refused: the child sends protocol 5."""

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def find_class(self, module: str, name: str) -> Any:
        qualified = f"{module}.{name}"
        if qualified in _RECONSTRUCTORS or qualified in _CONSTANTS:
            return super().find_class(module, name)
        found = super().find_class(module, name) if module in sys.modules else None
        # Judged by where it is defined: a dotted name walks attributes (`some_module.ctypes.CDLL`), and a
        # module holds the classes it imported.
        if isinstance(found, type) and ("." not in name or _defined_as(found) == qualified) and is_data_class(found):
            return found
        raise UnsafeValueError(
            f"the isolated child's answer names {qualified}, which the kernel does not rebuild from a child's answer "
            "(only data: plain values, numpy and pandas values, dataclasses, pydantic models, named tuples, enums, "
            "and classes of your own code)"
        )

    def load_reduce(self) -> None:
        called, arguments = self.stack[-2], self.stack[-1]
        if not _may_call(called, arguments):
            raise UnsafeValueError(f"the isolated child's answer calls {called!r:.100}, which the kernel does not call to rebuild data")
        super().load_reduce()

    def load_newobj(self) -> None:
        cls, arguments = self.stack[-2], self.stack[-1]
        if not (isinstance(cls, type) and is_data_class(cls) and _may_make(cls, arguments)):
            raise UnsafeValueError(f"the isolated child's answer makes {cls!r:.100} from arguments it chose")
        super().load_newobj()

    def load_newobj_ex(self) -> None:
        cls, arguments = self.stack[-3], self.stack[-2]
        if not (isinstance(cls, type) and is_data_class(cls) and _may_make(cls, arguments) and not self.stack[-1]):
            raise UnsafeValueError(f"the isolated child's answer makes {cls!r:.100} from arguments it chose")
        super().load_newobj_ex()

    def load_build(self) -> None:
        target = self.stack[-2]
        if isinstance(target, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            raise UnsafeValueError(f"the isolated child's answer sets the state of {target!r:.100}, which is the kernel's own code")
        super().load_build()
        numpy = sys.modules.get("numpy")
        if numpy is not None and isinstance(target, numpy.dtype) and not _truthful(target, numpy):
            raise UnsafeValueError(f"the isolated child's answer holds a dtype whose flags deny the objects its fields hold ({target!r:.100})")

    def load_refused(self) -> None:
        raise UnsafeValueError("the isolated child's answer uses an opcode that calls a class (INST or OBJ)")

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex
    dispatch[pickle.BUILD[0]] = load_build
    dispatch[pickle.INST[0]] = load_refused
    dispatch[pickle.OBJ[0]] = load_refused


def _truthful(dtype: Any, numpy: Any) -> bool:
    """Whether a dtype's flags say what numpy would work out from its fields: one that holds objects but says it
    does not would have numpy read the raw bytes of the message as pointers."""
    try:
        fresh = numpy.dtype(dtype.descr) if dtype.names is not None else numpy.dtype(dtype.str)
    except (TypeError, ValueError):
        return False
    return (dtype.flags & _NUMPY_OBJECT_FLAGS) == (fresh.flags & _NUMPY_OBJECT_FLAGS) and dtype.itemsize == fresh.itemsize
