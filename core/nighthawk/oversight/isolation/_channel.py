"""The channel between the kernel and its isolated child: length-prefixed pickles over a Unix socket pair,
and the unpickler the kernel reads the child's answers with.

The child runs untrusted code, so what it sends is untrusted too: an ordinary `pickle.loads` would call any
function the bytes name, in the kernel. The kernel's unpickler only rebuilds classes of data (containers,
numbers, dates, numpy and pandas values, the user's own classes) and the reconstructors their pickles
name, never a function or a class that acts on the world when it is built (a file, a process, a socket).
"""

from __future__ import annotations

import asyncio
import enum
import io
import pickle
import socket
import struct
import sys
from typing import Any

__all__ = ["ChannelClosed", "OversizedMessage", "UnsafeValueError", "frame", "read_frame", "read_message", "recv_exact", "send_message", "unpickle_data"]

_HEADER = struct.Struct("!Q")


class ChannelClosed(EOFError):
    """The other end closed the channel (the child ended)."""


class UnsafeValueError(pickle.UnpicklingError):
    """The child's answer names a function or class the kernel will not call to rebuild it."""


def frame(message: object) -> bytes:
    """`message` pickled, with its length in front."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def send_message(channel: socket.socket, message: object) -> None:
    """Send `message` (a blocking socket: the child's end)."""
    channel.sendall(frame(message))


class OversizedMessage(Exception):
    """The child announced a message longer than the kernel takes from it."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


async def read_frame(loop: asyncio.AbstractEventLoop, channel: socket.socket, limit: int) -> Any:
    """The next message from the child, read on `loop` (a non-blocking socket: the kernel's end), as data.

    Raises:
        OversizedMessage: It announced more than `limit` bytes: none of them is read (the child's code may
            stream garbage for ever, which the kernel would hold until it runs out of memory).
    """
    (size,) = _HEADER.unpack(await _recv_exact_async(loop, channel, _HEADER.size))
    if size > limit:
        raise OversizedMessage(size)
    return unpickle_data(await _recv_exact_async(loop, channel, size))


async def _recv_exact_async(loop: asyncio.AbstractEventLoop, channel: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = await loop.sock_recv(channel, min(size - len(chunks), 1 << 20))
        if not chunk:
            raise ChannelClosed("the channel closed")
        chunks += chunk
    return bytes(chunks)


def recv_exact(channel: socket.socket, size: int) -> bytes:
    """`size` bytes from `channel`; `ChannelClosed` when it ends first."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = channel.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            raise ChannelClosed("the channel closed")
        chunks += chunk
    return bytes(chunks)


def read_message(channel: socket.socket) -> Any:
    """The next request from the kernel (in the child, which trusts it), from a blocking socket."""
    (size,) = _HEADER.unpack(recv_exact(channel, _HEADER.size))
    return pickle.loads(recv_exact(channel, size))  # noqa: S301 - the kernel's own requests


def unpickle_data(data: bytes) -> Any:
    """Unpickle what the isolated child sent, rebuilding data only (`UnsafeValueError` otherwise)."""
    return _DataUnpickler(io.BytesIO(data)).load()


_DATA_MODULES = ("builtins", "collections", "datetime", "decimal", "fractions", "uuid", "enum", "pathlib",
                 "zoneinfo", "ipaddress", "numpy", "pandas")
"""Modules whose classes are data. Those that act when built are in `_ACTING`."""
_ACTING = ("numpy.memmap", "numpy.lib", "pandas.io", "builtins.open", "builtins.memoryview", "builtins.type",
           "builtins.super", "builtins.property", "builtins.classmethod", "builtins.staticmethod", "builtins.object")
"""Classes (and module prefixes) of the data modules that open or map files, or make code, when built."""
_RECONSTRUCTORS = frozenset({
    "copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__",
    "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct", "numpy.core.multiarray.scalar",
    "numpy._core.multiarray.scalar", "numpy._core.numeric._frombuffer", "numpy.core.numeric._frombuffer",
    "pandas._libs.internals._unpickle_block", "pandas.core.internals.blocks.new_block",
    "pandas.core.indexes.base._new_Index", "pandas._libs.tslibs.timestamps._unpickle_timestamp",
    "pandas._libs.tslibs.timedeltas._timedelta_unpickle", "pandas._libs.tslibs.nattype.__nat_unpickle",
    "pandas.core.arrays.categorical._unpickle_categorical", "pandas._libs.arrays.__pyx_unpickle_NDArrayBacked",
    "pandas._libs.tslibs.offsets._unpickle", "pandas.core.internals.managers._unpickle_block",
    "pandas.core.arrays.period._unpickle_period_array", "pandas.core.indexes.datetimes._new_DatetimeIndex",
    "pandas.core.indexes.period._new_PeriodIndex", "pandas._libs.tslibs.nattype._nat_unpickle",
    "numpy.ma.core._mareconstruct", "pyarrow.lib._restore_array", "pyarrow.lib.type_for_alias", "pyarrow.lib.py_buffer",
    "pyarrow.lib.large_string", "pyarrow.lib.string", "pyarrow.NA", "pyarrow.lib.NA", "pandas.NA", "pandas._libs.missing.NA",
})
"""Functions the pickles of data call to rebuild a value (they make the value and nothing else), and the
constants they name."""


class _DataUnpickler(pickle._Unpickler):  # type: ignore[name-defined]
    """Python's own unpickler (the C one cannot be told which calls to refuse), held to data.

    `find_class` hands out data classes, the user's own classes and the reconstructors; a call (`REDUCE`)
    is made only of a reconstructor, a data module's class, a named tuple or an enum. The old opcodes that
    call a class by another road (`INST`, `OBJ`) are refused: the child sends protocol 5.
    """

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def find_class(self, module: str, name: str) -> Any:
        qualified = f"{module}.{name}"
        if qualified in _RECONSTRUCTORS:
            return super().find_class(module, name)
        found = super().find_class(module, name) if module in sys.modules else None
        # A class is judged by where it is defined, not by the module the pickle names: a dotted name walks
        # attributes (`some_module.ctypes.CDLL`), and a module holds the classes it imported.
        if isinstance(found, type) and ("." not in name or _defined_as(found) == qualified) and _is_data_class(found):
            return found
        raise UnsafeValueError(
            f"the isolated child's answer names {qualified}, which the kernel does not call to rebuild a value "
            "(only data classes and their reconstructors)"
        )

    def load_reduce(self) -> None:
        called, arguments = self.stack[-2], self.stack[-1]
        if not _may_call(called) or not _may_reconstruct(called, arguments):
            raise UnsafeValueError(f"the isolated child's answer calls {called!r:.100}, which the kernel does not call")
        super().load_reduce()

    def load_refused(self) -> None:
        raise UnsafeValueError("the isolated child's answer uses an opcode that calls a class (INST or OBJ)")

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.INST[0]] = load_refused
    dispatch[pickle.OBJ[0]] = load_refused


def _defined_as(found: object) -> str:
    return f"{getattr(found, '__module__', '')}.{getattr(found, '__qualname__', '')}"


def _may_call(called: object) -> bool:
    if _defined_as(called) in _RECONSTRUCTORS:
        return True
    if not isinstance(called, type):
        return False
    if issubclass(called, (tuple, enum.Enum)):  # named tuples and enum members: built from their values
        return True
    return called.__module__.partition(".")[0] in _DATA_MODULES and _is_data_class(called)


_CLASS_TAKING = frozenset({"copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__"})
"""Reconstructors whose first argument is the class to build: it must be a data class too."""


def _may_reconstruct(called: object, arguments: object) -> bool:
    if _defined_as(called) not in _CLASS_TAKING:
        return True
    if not isinstance(arguments, tuple) or not arguments or not isinstance(arguments[0], type) or not _is_data_class(arguments[0]):
        return False
    if _defined_as(called) != "copyreg._reconstructor":
        return True
    # `_reconstructor(cls, base, state)` calls `base.__init__(obj, state)`: only `object` or a builtin data type.
    base = arguments[1] if len(arguments) > 1 else None
    return base is object or (isinstance(base, type) and base.__module__ == "builtins" and _is_data_class(base))


def _is_data_class(found: type) -> bool:
    """A class the kernel may rebuild from the child's answer: not one that acts when built (`_ACTING`), not
    an exception, a file, a socket or a thread, and either from a data module or the user's own (judged by
    the module that defines it)."""
    qualified = _defined_as(found)
    if any(qualified == acting or qualified.startswith(acting + ".") for acting in _ACTING):
        return False
    if issubclass(found, (BaseException, io.IOBase, socket.socket)) or found.__module__.startswith(("threading", "subprocess")):
        return False
    root = found.__module__.partition(".")[0]
    # The user's own classes: the notebook's, or any outside the standard library's modules.
    return root in _DATA_MODULES or root == "__main__" or (root not in sys.stdlib_module_names and not root.startswith("_"))
