"""Landlock, the kernel's file-system walls for an unprivileged process: read every file but devices, write only
beneath the folders named.

Reached with `ctypes` through the three system calls (444 to 446 on every Linux architecture since 5.13),
so no package is needed. The rules bind the calling thread and every process it starts afterwards; nothing
can lift them. ABI 3 is the least accepted: before it, `truncate(2)` escaped the walls.
"""

from __future__ import annotations

import ctypes
import errno as errno_codes
import os
import stat

__all__ = ["DEVICES_FOLDER", "MINIMUM_ABI", "READABLE_DEVICES", "abi_version", "restrict_files"]

MINIMUM_ABI = 3

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# Access rights to the file system (uapi/linux/landlock.h).
_WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 1, 1 << 2, 1 << 3  # executing (1 << 0) is not walled
_CHANGES = (
    1 << 4  # remove a directory
    | 1 << 5  # remove a file
    | 1 << 6  # make a character device
    | 1 << 7  # make a directory
    | 1 << 8  # make a regular file
    | 1 << 9  # make a socket
    | 1 << 10  # make a fifo
    | 1 << 11  # make a block device
    | 1 << 12  # make a symbolic link
)
_DEVICES = 1 << 6 | 1 << 11
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

READABLE_DEVICES = ("null", "zero", "full", "random", "urandom")
"""The devices the child may read, in `/dev`: those a program reads for bytes. Not a terminal (another of the
user's, where a password is typed), an input device (the keyboard, as root), a raw disk or the kernel's log."""
_SHARED_MEMORY = "shm"
"""POSIX shared memory's folder in `/dev`, readable too (no device opens there: `_mounts.py`)."""
DEVICES_FOLDER = "/dev"

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The Landlock ABI the running kernel offers; 0 when it has none (or it is turned off)."""
    version = _libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _handled(abi: int) -> int:
    """Reading, and every right that changes the file system, as far as this ABI knows them."""
    rights = _READ_FILE | _READ_DIR | _WRITE_FILE | _CHANGES
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def restrict_files(writable: tuple[str, ...], *, private: str, network: bool, abi: int) -> None:
    """Bind this thread (and what it starts later) to reading every file but the devices not in
    `READABLE_DEVICES` (and `/dev/shm`), and writing only beneath `writable`, the `private` temporary folder and `/dev/null`.
    Every folder can be listed. The `writable` folders are the resolved paths `isolated()` was given:
    one that now passes through a symbolic link is refused (an earlier step may have made one in a folder it
    could write, to aim this step's walls elsewhere).

    Without `network`, TCP `bind` and `connect` are walled too (ABI 4) and, from ABI 6, abstract Unix
    sockets and signals reach no process outside the walls.

    Raises:
        OSError: A system call failed (the message names it).
    """
    handled = _handled(abi)
    # Only the rights the ruleset's attribute size covers may be given (older kernels refuse a larger size).
    attr = _RulesetAttr(handled_access_fs=handled)
    size = 8
    if not network and abi >= 4:
        attr.handled_access_net, size = _NET_BIND_TCP | _NET_CONNECT_TCP, 16
    if not network and abi >= 6:
        attr.scoped, size = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL, 24
    ruleset = _check("landlock_create_ruleset", _libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0))
    try:
        # Device nodes stay unmade even in a writable folder: a root process could otherwise make the disk's.
        for folder in writable:
            _allow(ruleset, _opened_as_resolved(folder), folder, handled & ~_DEVICES)
        _allow(ruleset, os.open(private, os.O_PATH | os.O_CLOEXEC), private, handled & ~_DEVICES)
        _allow_reading(ruleset)
        _allow(ruleset, os.open(os.devnull, os.O_PATH | os.O_CLOEXEC), os.devnull, (_READ_FILE | _WRITE_FILE | _TRUNCATE) & handled)
        _check("landlock_restrict_self", _libc.syscall(_RESTRICT_SELF, ruleset, 0))
    finally:
        os.close(ruleset)


def _allow_reading(ruleset: int) -> None:
    """Reading beneath every entry of `/` but `/dev` (listed now: a folder made since the kernel started is
    there too), and of `/dev` only the `READABLE_DEVICES` and shared memory. Landlock grants, never takes away, beneath a folder:
    so `/` itself gets listing alone. A link that leads into `/dev` (to a terminal), or where cannot be told,
    gets nothing."""
    _allow(ruleset, os.open("/", os.O_PATH | os.O_CLOEXEC), "/", _READ_DIR)
    # A rule binds an inode: one on the root's, reached again through a bind mount of `/`, would hold `/dev` too.
    holding_devices = {_inode(os.stat(path)) for path in ("/", DEVICES_FOLDER)}
    with os.scandir("/") as entries:
        top = [(entry.path, entry.is_symlink()) for entry in entries if entry.path != DEVICES_FOLDER]
    for path, link in top:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:  # a link that leads nowhere
            continue
        if (link and _into_devices(_reached(fd))) or _inode(os.fstat(fd)) in holding_devices:
            os.close(fd)
            continue
        _allow(ruleset, fd, path, _READ_FILE)
    for name in (*READABLE_DEVICES, _SHARED_MEMORY):
        path = f"{DEVICES_FOLDER}/{name}"
        try:
            fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:  # not on this machine
            continue
        if stat.S_ISLNK(os.fstat(fd).st_mode):  # `/dev/shm` to `/run/shm`: readable where it leads, if outside `/dev`
            os.close(fd)
            continue
        _allow(ruleset, fd, path, _READ_FILE)


def _into_devices(reached: str) -> bool:
    """Whether reading beneath `reached` would reach `/dev`: it is in it, or holds it (a link to `/`)."""
    return not reached.startswith("/") or os.path.commonpath([reached, DEVICES_FOLDER]) in (reached, DEVICES_FOLDER)


def _inode(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


def _reached(fd: int) -> str:
    """The path the kernel followed to `fd`."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _opened_as_resolved(folder: str) -> int:
    """`folder` opened (`O_PATH`), checked to be the folder its resolved path names: the path the kernel followed
    to it (`/proc/self/fd`) is that path, so no symbolic link now on the way led elsewhere. (`openat2` would say
    so too, but a container's own seccomp profile may refuse it.)"""
    fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
    reached = _reached(fd)
    if reached != folder:
        os.close(fd)
        raise OSError(
            errno_codes.ELOOP,
            f"the writable folder {folder} now passes through a symbolic link, which isolated() did not resolve it through "
            "(it leads to " + (reached or "an unknown place") + "); name the folder again with isolated(writable=...)",
        )
    return fd


def _allow(ruleset: int, fd: int, path: str, rights: int) -> None:
    """Allow `rights` beneath the folder `fd` (opened for the rule, closed here) names."""
    try:
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        _check(f"landlock_add_rule({path})", _libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0))
    finally:
        os.close(fd)


def _check(call: str, result: int) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{call} failed: {os.strerror(errno)}")
    return int(result)
