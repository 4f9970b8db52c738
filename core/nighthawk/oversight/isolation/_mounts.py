"""The isolated child's own view of the mounts: the only device nodes that open are `/dev`'s.

Landlock (`_landlock.py`) walls `/dev` but tells no file by its type, and a device can be reached elsewhere: a node
in a tree root unpacked (a chroot's or a container's `dev/tty1` is the console's), in `/dev/shm`, or the user's
terminals where a chroot tool mounted `/dev/pts` again. So the worker takes a mount namespace of its own, made
private so that nothing it does there reaches the machine's, and marks every mount `nodev` there (opening a
device node on one fails with `EACCES`) but `/dev` itself and the devices it reads (`READABLE_DEVICES`) where
they are mounts of their own. One recursive `mount_setattr` reaches every mount, those hidden under another
too; where a container's profile refuses it, each mount its path reaches is remounted instead. A working
folder in a mount none of that reached (detached since the kernel entered it, or hidden under another where
each mount is remounted by its path) refuses the step: its devices would open. Before the seccomp filter, which
refuses `mount` and `unshare`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re

from ._landlock import DEVICES_FOLDER, READABLE_DEVICES

__all__ = ["devices_only_in_dev"]

_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_NOSYMFOLLOW, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 256, 32, 4096, 16384, 1 << 18
_KEPT = {"ro": _MS_RDONLY, "nosuid": _MS_NOSUID, "noexec": _MS_NOEXEC, "nosymfollow": _MS_NOSYMFOLLOW}
"""A mount's own flags a remount must repeat, or lose (its access times are kept when none is given)."""
_MOUNT_SETATTR, _AT_FDCWD, _AT_RECURSIVE, _AT_NO_AUTOMOUNT, _MOUNT_ATTR_NODEV = 442, -100, 0x8000, 0x800, 0x4
_KEEPING_DEVICES = (DEVICES_FOLDER, *(f"{DEVICES_FOLDER}/{name}" for name in READABLE_DEVICES))
_UNREACHABLE = (errno.EINVAL, errno.ENOENT, errno.ENOTDIR, errno.EACCES)
"""A mount its path no longer leads to (another mounted over a folder above it, its folder deleted) or that the
worker may not reach: the model's code cannot reach it by that path either."""

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_libc.syscall.restype = ctypes.c_long


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def devices_only_in_dev() -> None:
    """In the worker, single-threaded, before its capabilities go: no device node opens outside `/dev`.

    Raises:
        OSError: The namespace or a remount cannot be made here, or the working folder is out of its reach (the
            message says which).
    """
    _call("unshare(CLONE_NEWNS)", _libc.unshare(_CLONE_NEWNS))
    if _libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"making the mounts private failed: {os.strerror(number)}" + (
            " (isolated steps need `/` to be a mount of its own, which a plain chroot's is not)" if number == errno.EINVAL else ""
        ))
    if os.path.isdir(DEVICES_FOLDER) and not os.path.ismount(DEVICES_FOLDER):
        # `/dev` on the root's filesystem: a mount of its own (with what is mounted beneath it) keeps devices alone
        _call("mounting /dev on itself", _libc.mount(DEVICES_FOLDER.encode(), DEVICES_FOLDER.encode(), None, _MS_BIND | _MS_REC, None))
    keeping = [path for path in _KEEPING_DEVICES if _nodev(path) is False]
    if _set_attr("/", _AT_RECURSIVE, attr_set=_MOUNT_ATTR_NODEV) == 0:
        for path in keeping:  # a device's own mount (a container's `/dev/null`), or not a mount: nothing to do then
            if _set_attr(path, 0, attr_clr=_MOUNT_ATTR_NODEV) != 0 and ctypes.get_errno() not in _UNREACHABLE:
                _call(f"keeping the devices of {path}", -1)
    elif ctypes.get_errno() in (errno.ENOSYS, errno.EPERM):  # refused by a container's profile
        _remount_each()
    else:
        _call("marking every mount nodev", -1)
    _check_working_folder()


def _nodev(path: str) -> bool | None:
    """Whether the mount `path` is on opens no device; `None` when there is no `path`."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_NODEV)
    except FileNotFoundError:
        return None


def _check_working_folder() -> None:
    """Refuse a working folder whose mount still opens devices outside `/dev`: the model's code would open them
    by names relative to it."""
    if _nodev(".") is not False:
        return
    try:
        folder = os.getcwd()
    except OSError:
        folder = ""
    if folder == DEVICES_FOLDER or folder.startswith(DEVICES_FOLDER + "/"):
        return
    raise OSError(
        f"the working folder {folder or '(one no path leads to)'} is in a mount the walls cannot reach (hidden under "
        "another or detached since the kernel entered it), where device nodes would open; change the working folder",
    )


def _set_attr(path: str, flags: int, *, attr_set: int = 0, attr_clr: int = 0) -> int:
    attr = _MountAttr(attr_set=attr_set, attr_clr=attr_clr)
    return int(_libc.syscall(
        _MOUNT_SETATTR, ctypes.c_int(_AT_FDCWD), os.fsencode(path), ctypes.c_uint(flags | _AT_NO_AUTOMOUNT),
        ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
    ))


def _remount_each() -> None:
    """Without `mount_setattr`: each mount its path reaches, remounted `nodev` with its own flags kept (`/dev` and
    the devices' own mounts left as they are)."""
    for point, options in _mounts():
        if point in _KEEPING_DEVICES or "nodev" in options:
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
