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

import decimal
import io
import pickle
from typing import Any

from . import _array_values, _python_values  # noqa: F401 - their builders join BUILDERS as they load
from ._builders import BUILDERS, UnsafeValueError

__all__ = ["UnsafeValueError", "unpickle_data"]


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
        found = BUILDERS.get(name)
        if found is not None and found.__module__ == module:
            return found
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
