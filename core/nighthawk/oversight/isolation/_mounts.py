"""The isolated child's own view of the mounts: a device node opens only beneath `/dev`.

Landlock (`_landlock.py`) walls `/dev` but tells no file by its type, and a device can be reached elsewhere: a node
in a tree root unpacked (a chroot's or a container's `dev/tty1` is the console's), or the user's terminals where a
chroot tool mounted `/dev/pts` again. So the worker takes a mount namespace of its own, made private so that
nothing it does there reaches the machine's, and marks every mount outside `/dev` `nodev` there: opening a device
node on one fails with `EACCES`. The other flags of each mount are kept as they were (a mount copied into an
ordinary user's namespace may not lose one). Before the seccomp filter, which refuses `mount` and `unshare`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re

__all__ = ["devices_only_in_dev"]

_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_NOSYMFOLLOW, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 256, 32, 4096, 16384, 1 << 18
_KEPT = {"ro": _MS_RDONLY, "nosuid": _MS_NOSUID, "noexec": _MS_NOEXEC, "nosymfollow": _MS_NOSYMFOLLOW}
"""A mount's own flags a remount must repeat, or lose (its access times are kept when none is given)."""
_DEVICES = "/dev"
_UNREACHABLE = (errno.EINVAL, errno.ENOENT, errno.ENOTDIR, errno.EACCES)
"""A mount its path no longer leads to (another mounted over a folder above it, its folder deleted) or that the
worker may not reach: the model's code cannot reach it by that path either."""

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]


def devices_only_in_dev() -> None:
    """In the worker, single-threaded, before its capabilities go: no device node opens outside `/dev`.

    Raises:
        OSError: The namespace or a remount cannot be made here (the message names the mount).
    """
    _call("unshare(CLONE_NEWNS)", _libc.unshare(_CLONE_NEWNS))
    _call("making the mounts private", _libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None))
    for point, options in _mounts():
        if point == _DEVICES or point.startswith(_DEVICES + "/") or "nodev" in options:
            continue
        flags = _MS_REMOUNT | _MS_BIND | _MS_NODEV
        for option in options:
            flags |= _KEPT.get(option, 0)
        if _libc.mount(None, os.fsencode(point), None, flags, None) != 0 and ctypes.get_errno() not in _UNREACHABLE:
            _call(f"marking {point} nodev", -1)


def _mounts() -> list[tuple[str, set[str]]]:
    """Each mount point of this namespace, with its own flags (`/proc/self/mountinfo`: fields 5 and 6), outermost
    first. An automount's trigger is left alone: remounting it would mount what it stands for."""
    fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
    try:
        table = b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
    finally:
        os.close(fd)
    found = []
    for line in table.splitlines():
        fields = line.split()
        if fields[fields.index(b"-") + 1] != b"autofs":
            found.append((_unescaped(os.fsdecode(fields[4])), set(os.fsdecode(fields[5]).split(","))))
    return found


_ESCAPE = re.compile(r"\\([0-7]{3})")  # compiled in the kernel, as the module loads: not in each child


def _unescaped(path: str) -> str:
    """A path as mountinfo writes it, with space, tab, newline and backslash as octal escapes."""
    return _ESCAPE.sub(lambda escape: chr(int(escape.group(1), 8)), path) if "\\" in path else path


def _call(what: str, result: int) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what} failed: {os.strerror(number)}")
