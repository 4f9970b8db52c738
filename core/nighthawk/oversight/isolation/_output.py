"""What the model's code prints in the isolated child, carried back to the kernel's own streams.

Run in the kernel, `print` in the model's code reaches the cell's output; so it must from the child. The
child's standard output and error (the descriptors 1 and 2, so that a process it starts prints there too)
are two files in its private temporary folder. After each request the child reads what was added to them
and sends it as an `("output", out, err)` message ahead of its answer; the kernel writes it to its own
`sys.stdout` and `sys.stderr` on the user's thread, where a cell's output goes.

Files rather than pipes: a pipe holds 64 KiB, and the child that fills it is the one that would read it.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

__all__ = ["LIMIT", "ChildOutput", "relay"]

LIMIT = 1 << 20
"""The most bytes of each stream one request carries back (1 MiB): the rest is counted, not sent."""
_SENT_LIMIT = LIMIT + 200
"""The most characters of each stream the kernel writes from one message (the child's note of the rest included)."""


class ChildOutput:
    """In the child: its standard output and error, pointed at files it reads back after each request."""

    def __init__(self, temp_dir: str) -> None:
        self._readers: list[list[int]] = []  # [descriptor, offset read up to], for stdout then stderr
        for fd, name in ((1, "stdout"), (2, "stderr")):
            path = os.path.join(temp_dir, name)
            written = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            os.dup2(written, fd)  # inherited by the processes the model's code starts
            os.close(written)
            self._readers.append([os.open(path, os.O_RDONLY | os.O_CLOEXEC), 0])
        self._streams = tuple(
            open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
            for fd in (1, 2)
        )
        sys.stdout, sys.stderr = self._streams

    def taken(self) -> tuple[str, str] | None:
        """What was printed since the last call, as `(out, err)`; `None` when nothing was."""
        for stream in self._streams:
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # closed or broken by the model's code: what reached the file is still read
        out, err = (self._read(reader) for reader in self._readers)
        return (out, err) if out or err else None

    @staticmethod
    def _read(reader: list[int]) -> str:
        fd, offset = reader
        size = os.fstat(fd).st_size
        if size < offset:  # the model's code truncated the file: read it afresh
            offset = 0
        data = os.pread(fd, min(size - offset, LIMIT), offset)
        reader[1] = size
        text = data.decode("utf-8", errors="replace")
        if size - offset > LIMIT:
            text += f"\n[{size - offset - LIMIT:,} more bytes printed in the isolated child, not shown]\n"
        return text


def relay(out: str, err: str) -> None:
    """In the kernel, on the user's thread: write what the child printed where its own code's output goes.
    The child is untrusted: it may send more than it should, which is cut."""
    for text, stream in ((out, sys.stdout), (err, sys.stderr)):
        if len(text) > _SENT_LIMIT:
            text = text[:_SENT_LIMIT] + "\n[the isolated child sent more, not shown]\n"
        if text:
            _write(stream, text)


def _write(stream: TextIO | None, text: str) -> None:
    if stream is not None:
        stream.write(text)
        stream.flush()
