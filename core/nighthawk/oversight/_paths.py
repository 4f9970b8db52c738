"""Which files an audited operation changes, named as the operating system will name them, and the checks
of the file guards (`read_only(writable=...)`) on them; used by the audit hook of `_audit.py`.

A path is resolved the way the system call will resolve it: relative to the `dir_fd` it is given (Linux
names an open directory under `/proc/self/fd`) or to the current directory at the time of the call; a
symbolic link is followed where the operation follows it (opening, truncating) and not where it acts on the
link itself (removing, renaming, making), and where that depends on flags the events do not carry
(`chmod`, `chown`, `utime`) both the link and what it points to must be writable. Changing the current
directory is checked too: afterwards the relative paths of the user's own code would name other files.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, Literal

from ._ioctls import TERMINAL, changes_a_file
from ._kinds import Refusal, RuntimeGuard

__all__ = [
    "CHANGED_PATHS",
    "WRITE_FLAGS",
    "check_chdir",
    "check_change",
    "check_ioctl",
    "check_open",
    "check_socket_file",
    "check_sqlite",
    "check_sqlite_handle",
    "file_guard",
    "opens_for_writing",
    "refusal",
    "sqlite_connection_type",
]

Check = Callable[[tuple[RuntimeGuard, ...], str, tuple[object, ...]], "Refusal | None"]
Follow = Literal["link", "target", "both"]
"""What an operation acts on when its path is a symbolic link: the link, what it points to, or either."""


def file_guard(guards: tuple[RuntimeGuard, ...]) -> RuntimeGuard | None:
    """The first of `guards` that guards files (`read_only`), if any."""
    return next((guard for guard in guards if guard.files), None)


def refusal(guard: RuntimeGuard, what: str, why: str) -> Refusal:
    return Refusal(guard.policy, f"{guard.policy} refused {what}: {why}")


WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

CHANGED_PATHS: dict[str, tuple[tuple[int, int | None, Follow], ...]] = {
    # event: the paths it changes, as (position of the path, position of its `dir_fd` or None, what it acts on)
    "os.remove": ((0, 1, "link"),),
    "os.rmdir": ((0, 1, "link"),),
    "os.rename": ((0, 2, "link"), (1, 3, "link")),
    "os.truncate": ((0, None, "target"),),
    "os.chmod": ((0, 2, "both"),),
    "os.chown": ((0, 3, "both"),),
    "os.chflags": ((0, None, "both"),),
    # the source too: a link in a writable folder would write the original
    "os.link": ((0, 2, "both"), (1, 3, "link")),
    "os.symlink": ((1, 2, "link"),),
    "os.mkdir": ((0, 2, "link"),),
    "os.utime": ((0, 3, "both"),),
    "os.setxattr": ((0, None, "both"),),
    "os.mkfifo": ((0, 1, "link"),),
    "os.mknod": ((0, 1, "link"),),
    "os.removexattr": ((0, None, "both"),),
    "shutil.rmtree": ((0, 1, "both"),),
    "shutil.move": ((0, None, "link"), (1, None, "both")),
    "shutil.copyfile": ((1, None, "target"),),
    "shutil.copymode": ((1, None, "both"),),
    "shutil.copystat": ((1, None, "both"),),
    "shutil.copytree": ((1, None, "both"),),
    "shutil.chown": ((0, None, "both"),),
    "shutil.make_archive": ((0, None, "both"),),
    "shutil.unpack_archive": ((1, None, "both"),),
}


def opens_for_writing(args: tuple[object, ...]) -> bool:
    _, mode, flags = args
    # The flags are the operating system's own (`open`, `io.FileIO` and `os.open` all pass them).
    if isinstance(flags, int):
        return bool(flags & WRITE_FLAGS)
    return isinstance(mode, str) and any(letter in mode for letter in "wax+")


def check_open(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    path = args[0]
    if not opens_for_writing(args) or isinstance(path, int):
        return None  # reading; or a descriptor already open, which grants nothing new
    return _check_paths(guards, f"opening {_shown(path)} for writing", ((path, None, "target"),))


def check_change(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    targets = tuple(
        (args[at], args[fd_at] if fd_at is not None and fd_at < len(args) else None, follow)
        for at, fd_at, follow in CHANGED_PATHS[event]
        if at < len(args)
    )
    shown = " and ".join(_shown(path) for path, _, _ in targets)
    return _check_paths(guards, f"{event} of {shown}", targets)


_returns: set[str] = set()
"""Directories model code left by an allowed `os.chdir`: it may go back (`contextlib.chdir`, `make_archive`)."""


def check_chdir(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    target = _resolved(args[0], None, follow=True)
    if target is not None and target in _returns:
        return None
    found = _check_paths(guards, f"changing the current directory to {_shown(args[0])}", ((args[0], None, "target"),),
                         hint="relative paths in your code would then name other files")
    if found is None:
        try:
            _returns.add(os.getcwd())
        except OSError:
            pass
    return found


def check_socket_file(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    """Binding a Unix socket to a path makes a file there (an abstract address, starting with NUL, does not)."""
    address = args[1] if len(args) > 1 else None
    if not isinstance(address, str | bytes) or not address or address[:1] in ("\0", b"\0"):
        return None
    return _check_paths(guards, f"binding a socket file at {_shown(address)}", ((address, None, "link"),))


def check_ioctl(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    guard = file_guard(guards)
    if guard is None or not isinstance(args[1], int) or not sys.platform.startswith("linux"):
        return None  # (the request numbers are Linux's: elsewhere the same type byte means other things)
    request = args[1] & 0xFFFFFFFF  # an `unsigned int` for the operating system, whatever Python was given
    if request in TERMINAL:
        return refusal(guard, f"typing into a terminal (ioctl {request:#x})", "model-written code may not type commands into a terminal")
    if not changes_a_file(request):
        return None
    what = f"ioctl {request:#x} (a filesystem's own request, which may change a file's flags or layout)"
    try:
        path = os.readlink(f"/proc/self/fd/{args[0]}")  # the file the descriptor is open on, as the system names it
    except (OSError, TypeError):
        path = ""
    if not path.startswith("/"):  # a pipe, a socket, or a file since deleted: no folder of it can be judged
        return refusal(guard, f"{what} on descriptor {args[0]}", "it names no file in a writable folder")
    return _check_paths(guards, f"{what} on {_shown(path)}", ((path, None, "target"),))


def check_sqlite(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    database = args[0]
    if not isinstance(database, str | bytes):
        # SQLite opens what `os.fspath` gives, which another call need not give again (nor `str()`): only the
        # path types of the standard library are read; anything else is refused, as the path cannot be told.
        if not _plain_path(database):
            guard = file_guard(guards)
            return None if guard is None else refusal(
                guard, f"sqlite3.connect to a {type(database).__name__} object",
                "model-written code may open SQLite databases under this policy only by a `str` path",
            )
        database = os.fspath(database)  # type: ignore[arg-type]
    database = os.fsdecode(database)
    if database in ("", ":memory:"):
        return None  # private to the connection
    if database.startswith("file:"):
        database, _, query = database[len("file:"):].partition("#")[0].partition("?")
        if database == ":memory:" or _read_only_uri(query):
            return None
    hint = "open it read-only with `sqlite3.connect('file:...?mode=ro', uri=True)`"
    return _check_paths(guards, f"sqlite3.connect to {_shown(database)}", ((database, None, "target"),), hint=hint)


def _plain_path(value: object) -> bool:
    """Whether `value` is a path object of the standard library's own, whose `os.fspath` is its `str`."""
    import pathlib

    # The classes themselves, not their subclasses (whose `__fspath__` may answer differently at each call).
    # Their module is `pathlib` on 3.11 and `pathlib._local` on 3.13, so it is no test of where they come from.
    return type(value) in (
        os.DirEntry,
        pathlib.PurePath,
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
        pathlib.Path,
        pathlib.PosixPath,
        pathlib.WindowsPath,
    )


def _read_only_uri(query: str) -> bool:
    """Whether an SQLite URI's query opens the database read-only (or in memory): it names `mode`, and every
    `mode` it names is `ro` or `memory` (SQLite decodes `%HH` in names and values; other names are ignored)."""
    from urllib.parse import unquote

    modes = [
        unquote(value)
        for name, _, value in (parameter.partition("=") for parameter in query.split("&"))
        if unquote(name) == "mode"
    ]
    return bool(modes) and all(mode in ("ro", "memory") for mode in modes)


def check_sqlite_handle(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    # SQL writes files without an event (`ATTACH DATABASE 'new.db'`, `VACUUM INTO 'copy.db'`, from a
    # `:memory:` or `mode=ro` connection alike): model code gets connections that may attach no database.
    if type(args[0]) is sqlite_connection_type():
        return None
    guard = file_guard(guards)
    if guard is None:
        return None
    return refusal(guard, f"a {type(args[0]).__name__} connection", "model-written code may open SQLite databases "
                   "under this policy only with `sqlite3.connect(...)` and its default connection type")


@functools.cache
def sqlite_connection_type() -> type:
    """The connection class `sqlite3.connect` makes for model code under a file guard: it may attach no
    other database (`ATTACH`, `VACUUM INTO` write files that no audit event announces)."""
    import sqlite3

    class ModelConnection(sqlite3.Connection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)

    return ModelConnection


def _check_paths(
    guards: tuple[RuntimeGuard, ...], what: str, targets: tuple[tuple[object, object, Follow], ...], hint: str = ""
) -> Refusal | None:
    for guard in guards:
        if not guard.files:
            continue
        for path, dir_fd, follow in targets:
            named = (
                [_resolved(path, dir_fd, follow=True), _resolved(path, dir_fd, follow=False)]
                if follow == "both"
                else [_resolved(path, dir_fd, follow=follow == "target")]
            )
            if any(
                resolved is None or not any(_inside(resolved, directory) for directory in guard.writable)
                for resolved in named
            ):
                where = f" outside {', '.join(guard.writable)}" if guard.writable else ""
                why = f"model-written code may not change files{where} under this policy"
                return refusal(guard, what, f"{why}; {hint}" if hint else why)
    return None


def _resolved(path: object, dir_fd: object, *, follow: bool) -> str | None:
    """The absolute path `path` names, its links resolved (the last one only if `follow`); `None` when it
    cannot be told."""
    if isinstance(path, int) and not isinstance(path, bool) and path >= 0:
        path, follow = f"/proc/self/fd/{path}", True  # a descriptor (`fchdir`): Linux names what it is open on
    if (text := _text(path)) is None:
        return None
    if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(text):
        try:  # relative to an open directory: Linux names it
            text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
        except OSError:
            return None
    head, tail = os.path.split(text)
    if follow or tail in ("", ".", ".."):  # `rmdir('link/')` follows the link: a trailing separator does
        return os.path.realpath(text)
    return os.path.join(os.path.realpath(head or os.curdir), tail)


def _text(path: object) -> str | None:
    """The name the system call was given for `path`, as a plain `str`; `None` when it cannot be told.

    The call has already asked a path object for its name (`__fspath__`), and a second answer need not be
    the same: only the standard library's own path types are asked again. A `str` or `bytes` subclass is
    read as its characters (the call reads them so), never through methods it may override."""
    if isinstance(path, str):
        return "".join((path,))
    if isinstance(path, bytes):
        return os.fsdecode(b"".join((path,)))
    if _plain_path(path):
        return os.fspath(path)  # type: ignore[arg-type]
    return None


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _shown(path: object) -> str:
    if isinstance(path, int):
        return f"descriptor {path!r}"
    text = _text(path)
    return f"a path given as a {type(path).__name__} object" if text is None else repr(text)
