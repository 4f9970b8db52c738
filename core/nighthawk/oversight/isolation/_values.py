"""How a value crosses from an isolated child to the kernel: as data, never as a program.

A pickle is a small program: it names functions and classes and calls them. The child runs the model's code,
which can write any bytes to the channel, so the kernel cannot let an answer call what it names: two reviews
of an unpickler held to "data classes" found a road to a shell command each time, through numpy's and pandas'
own reconstructors, which call what they are handed. So the child sends every value that is not one of
Python's plain kinds (numbers, text, bytes, lists, tuples, dicts, sets, which pickle writes without naming
anything) as a call of one of the kernel's builders of data (`_python_values.py`, `_array_values.py`,
registered in `_builders.py`), with plain arguments only: numbers, text, bytes, and values already built the
same way (`_value_forms.py` gives each value its builder, in the child). The unpickler here names nothing
else, fills only the lists, dicts and sets it made, and builds no object and sets no state itself. Each
builder checks its arguments and makes its value with the public, validating constructors, so that no size,
shape, code or time zone of the child's choosing makes the kernel allocate, read, crash or run code.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Iterable
from typing import Any

from . import _array_values, _python_values  # noqa: F401 - their builders join BUILDERS as they load
from ._builders import BUILDERS, UnsafeValueError

__all__ = ["UnsafeValueError", "unpickle_data"]


def unpickle_data(data: bytes) -> Any:
    """Unpickle what the isolated child sent: plain values, and the builders' calls only."""
    try:
        value = _DataUnpickler(io.BytesIO(data)).load()
    except UnsafeValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - a builder refusing its parts (pandas' own errors), too deep, too large
        raise UnsafeValueError(f"the isolated child's answer does not hold together: {type(exc).__name__}: {exc}") from exc
    if type(value) is _Call:
        raise UnsafeValueError("the isolated child's answer is one of the kernel's builders, not a value")
    return value


class _DataUnpickler(pickle._Unpickler):  # type: ignore[name-defined]
    """Python's own unpickler with every opcode that names or calls something held to the builders, the ones that
    build an object or set its state (`NEWOBJ`, `BUILD`, `INST`, `OBJ`, extensions) refused, and no value nested
    deeper than `_DEEPEST`."""

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self._depths: dict[int, tuple[object, int]] = {}
        """Each container built so far, by `id`, with how deeply it nests (held, so that its `id` stays its own)."""

    def find_class(self, module: str, name: str) -> Any:
        found = BUILDERS.get(name)
        if found is not None and found.__module__ == module:
            return _Call(found)  # not the builder itself: a builder is called by the answer, never handed on as a value
        raise UnsafeValueError(f"the isolated child's answer names {module}.{name}, which is not one of the kernel's builders of data")

    def load_reduce(self) -> None:
        arguments = self.stack.pop()
        called = self.stack[-1]
        if type(called) is not _Call or type(arguments) is not tuple:
            raise UnsafeValueError("the isolated child's answer calls something that is not one of the kernel's builders of data")
        self.stack[-1] = called.builder(*arguments)
        self._deeper(self.stack[-1], (arguments,))

    def load_refused(self) -> None:
        raise UnsafeValueError("the isolated child's answer builds an object or sets its state directly; the kernel builds data only")

    def _deeper(self, container: object, items: Iterable[object]) -> None:
        items = list(items)
        if any(type(item) is _Call for item in items):
            raise UnsafeValueError("the isolated child's answer hands on one of the kernel's builders as a value")
        depth = 1 + max((self._depths.get(id(item), (None, 0))[1] for item in items), default=0)
        if depth > self._depths.get(id(container), (None, 0))[1]:
            self._depths[id(container)] = (container, depth)
        if depth > _DEEPEST:
            # Python recurses into a nested value in C with no bound (a tuple's hash): a tuple nested a million deep,
            # one byte a level, crashed the kernel as soon as it was a dict's key.
            raise UnsafeValueError(f"the isolated child's answer nests values over {_DEEPEST} deep")

    def _made(self) -> None:
        """After an opcode that made a container of the items above the mark (or of the last one to three)."""
        made = self.stack[-1]
        self._deeper(made, [*made.keys(), *made.values()] if isinstance(made, dict) else made)

    def load_tuple(self) -> None:
        super().load_tuple()
        self._made()

    def load_tuple1(self) -> None:
        super().load_tuple1()
        self._made()

    def load_tuple2(self) -> None:
        super().load_tuple2()
        self._made()

    def load_tuple3(self) -> None:
        super().load_tuple3()
        self._made()

    def load_list(self) -> None:
        super().load_list()
        self._made()

    def load_dict(self) -> None:
        super().load_dict()
        self._made()

    def load_frozenset(self) -> None:
        super().load_frozenset()
        self._made()

    def _filling(self, target: object, kind: type) -> None:
        """These opcodes call the target's own `append`, `extend`, `__setitem__` or `add`: only a plain list, dict or
        set the answer made is filled (a numpy array's `__setitem__`, a pandas index's `append` would act)."""
        if type(target) is not kind:
            raise UnsafeValueError(f"the isolated child's answer fills a {type(target).__name__} as a {kind.__name__}")

    def load_append(self) -> None:
        self._filling(self.stack[-2], list)
        items = self.stack[-1:]
        super().load_append()
        self._deeper(self.stack[-1], items)

    def load_setitem(self) -> None:
        self._filling(self.stack[-3], dict)
        items = self.stack[-2:]
        super().load_setitem()
        self._deeper(self.stack[-1], items)

    def load_appends(self) -> None:
        self._filling(self.metastack[-1][-1], list)  # the stack below the mark holds the target
        items = list(self.stack)  # above the mark: what the opcode takes
        super().load_appends()
        self._deeper(self.stack[-1], items)

    def load_setitems(self) -> None:
        self._filling(self.metastack[-1][-1], dict)
        items = list(self.stack)
        super().load_setitems()
        self._deeper(self.stack[-1], items)

    def load_additems(self) -> None:
        self._filling(self.metastack[-1][-1], set)
        items = list(self.stack)
        super().load_additems()
        self._deeper(self.stack[-1], items)

    for _opcode in (pickle.NEWOBJ, pickle.NEWOBJ_EX, pickle.BUILD, pickle.INST, pickle.OBJ, pickle.EXT1, pickle.EXT2, pickle.EXT4,
                    pickle.PERSID, pickle.BINPERSID):
        dispatch[_opcode[0]] = load_refused
    for _opcode, _load in ((pickle.REDUCE, load_reduce), (pickle.TUPLE, load_tuple), (pickle.TUPLE1, load_tuple1),
                           (pickle.TUPLE2, load_tuple2), (pickle.TUPLE3, load_tuple3), (pickle.LIST, load_list), (pickle.DICT, load_dict),
                           (pickle.FROZENSET, load_frozenset), (pickle.APPEND, load_append), (pickle.SETITEM, load_setitem),
                           (pickle.APPENDS, load_appends), (pickle.SETITEMS, load_setitems), (pickle.ADDITEMS, load_additems)):
        dispatch[_opcode[0]] = _load


class _Call:
    """A builder as an answer names it: callable by `REDUCE` alone, and inert anywhere else."""

    __slots__ = ("builder",)

    def __init__(self, builder: Callable[..., Any]) -> None:
        self.builder = builder


_DEEPEST = 1000
"""How deeply an answer's values may nest (lists in lists, tuples in tuples): data nests a few levels."""
