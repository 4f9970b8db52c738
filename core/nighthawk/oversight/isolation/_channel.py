"""The channel between the kernel and its isolated child: length-prefixed pickles over a Unix socket pair.

The child runs untrusted code, so what it sends is untrusted too: the kernel reads it with an unpickler held
to data (`_values.py`), and takes no message longer than the child could have made.
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import struct
from typing import Any

from ._values import unpickle_data

__all__ = ["ChannelClosed", "OversizedMessage", "frame", "read_frame", "read_message", "recv_exact", "send_message"]

_HEADER = struct.Struct("!Q")


class ChannelClosed(EOFError):
    """The other end closed the channel (the child ended)."""


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
