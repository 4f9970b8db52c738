"""What the model's code prints in the isolated child, carried back to the kernel's own streams.

Run in the kernel, `print` in the model's code reaches the cell's output; so it must from the child. The
child's standard output and error (the descriptors 1 and 2, so that a process it starts prints there too)
are two files in its private temporary folder. After each request the child reads what was added to them,
empties them, and sends it as one `("output", out, err)` message ahead of its answer; the kernel writes it
to its own `sys.stdout` and `sys.stderr` on the user's thread, where a cell's output goes.

Files rather than pipes: a pipe holds 64 KiB, and the child that fills it is the one that would read it.
The kernel takes at most one such message a request and cuts each stream, for the child may send anything.

A call whose child ends before it answers (it exits or crashes, or the step's budget or Ctrl-C kills it)
sends no message: the kernel reads what is left in the files itself (`LeftOutput`). It opens them once the
child is walled and before the child runs any of the model's code, so they are the child's own two files
whatever the model's code makes of the folder later; the child writes its lines through at once, so that a
line printed just before the end is in them.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import TextIO

__all__ = ["LIMIT", "ChildOutput", "LeftOutput", "relay"]

LIMIT = 1 << 20
"""The most bytes of each stream one request carries back (1 MiB): the rest is counted, not sent."""
_SENT_LIMIT = LIMIT + 200
"""The most characters of each stream the kernel writes from one message (the child's note of the rest included)."""
_NAMES = ("stdout", "stderr")
"""The two files in the child's temporary folder, for its descriptors 1 and 2."""


class ChildOutput:
    """In the child: its standard output and error, pointed at files it reads back after each request."""

    def __init__(self, temp_dir: str) -> None:
        self._readers: list[int] = []  # stdout's file, then stderr's
        for fd, name in zip((1, 2), _NAMES, strict=True):
            path = os.path.join(temp_dir, name)
            written = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            os.dup2(written, fd)  # inherited by the processes the model's code starts
            os.close(written)
            self._readers.append(os.open(path, os.O_RDWR | os.O_CLOEXEC))
        self._streams = tuple(
            # Line by line: the kernel reads what a call whose child was killed printed up to its end.
            open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115
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
    def _read(fd: int) -> str:
        text = _printed(fd)
        # Emptied once read, so that a chatty step does not fill the temporary folder (memory, on tmpfs).
        # The writers append: what they write next starts the file again.
        os.ftruncate(fd, 0)
        return text


class LeftOutput:
    """In the kernel: its own hold on a walled child's two output files, to read what the call under way
    printed when the child ends without answering. A file it cannot open (or that is not a regular file)
    is left out: the step's error matters more than its output."""

    def __init__(self, temp_dir: str) -> None:
        self._readers: list[int | None] = [None, None]  # stdout's, then stderr's
        try:
            folder = os.open(temp_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return
        try:
            self._readers = [_opened(name, folder) for name in _NAMES]
        finally:
            os.close(folder)

    def taken(self) -> tuple[str, str] | None:
        """What the call under way printed, as `(out, err)` (`None` when nothing was); read once."""
        out, err = (self._read(reader) for reader in self._readers)
        self.close()
        return (out, err) if out or err else None

    def close(self) -> None:
        for fd in self._readers:
            if fd is not None:
                os.close(fd)
        self._readers = [None, None]

    @staticmethod
    def _read(fd: int | None) -> str:
        if fd is None:
            return ""
        try:
            return _printed(fd)
        except OSError:
            return ""


def _opened(name: str, folder: int) -> int | None:
    """The file `name` of `folder` opened for reading, if it is a regular file (never a link, never blocking)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        return None
    return fd


def _printed(fd: int) -> str:
    """What the file holds, the first `LIMIT` bytes of it and a count of the rest."""
    size = os.fstat(fd).st_size
    data = os.pread(fd, min(size, LIMIT), 0)
    text = data.decode("utf-8", errors="replace")
    if size > LIMIT:
        text += f"\n[{size - LIMIT:,} more bytes printed in the isolated child, not shown]\n"
    return text


_TERMINAL_CONTROLS = {code: f"<U+{code:04X}>" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(code) not in "\n\t\r"}
"""The control characters a terminal acts on (escape sequences clear the screen, set the clipboard, move the
cursor), written out where the child's output reaches a terminal; a carriage return (a progress bar's) stays."""
_COLOURS = re.compile(r"\x1b\[([0-9;]*)m")
"""A colour or style sequence (SGR), kept as it is unless it hides text (8)."""


def _for_terminal(text: str) -> str:
    kept = []
    for at, part in enumerate(_COLOURS.split(text)):
        if at % 2:  # the parameters of a colour sequence
            hides = "8" in part.split(";")
            kept.append(f"<U+001B>[{part}m" if hides else f"\x1b[{part}m")
        else:
            kept.append(part.translate(_TERMINAL_CONTROLS))
    return "".join(kept)


def relay(out: str, err: str) -> None:
    """In the kernel, on the user's thread: write what the child printed where its own code's output goes.
    The child is untrusted: it may send more than it should, which is cut, and, to a terminal, control
    characters, which are shown written out but for colours and carriage returns (a notebook's output shows
    them as text already)."""
    for text, stream in ((out, sys.stdout), (err, sys.stderr)):
        if len(text) > _SENT_LIMIT:
            text = text[:_SENT_LIMIT] + "\n[the isolated child sent more, not shown]\n"
        if text and _is_terminal(stream):
            text = _for_terminal(text)
        if text:
            _write(stream, text)


def _is_terminal(stream: TextIO | None) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except Exception:  # noqa: BLE001 - the user's stream object: one that cannot tell is not a terminal
        return False


def _write(stream: TextIO | None, text: str) -> None:
    """Write `text` as the stream can take it: a character its encoding lacks (or a lone surrogate the
    child sent) is escaped; a stream that is closed, broken or fails in a way of its own (it is the user's
    object) loses the text, not the step."""
    if stream is None:
        return
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    try:
        stream.write(text)
        stream.flush()
    except Exception:  # noqa: BLE001, S110 - see above
        pass
