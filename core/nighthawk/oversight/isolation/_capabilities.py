"""The isolated worker's capabilities: all dropped but the two that let it read and write past a file's
permission bits, which Landlock bounds.

A kernel run as root forks a worker that is root too, with every capability: Landlock and the seccomp filter
do not cover what those reach (freezing a filesystem through an `ioctl` on a folder, the machine's clock and
host name, real-time priority, a file's immutable flag). An ordinary user's worker holds every capability of
its user namespace, which reach nothing of the machine's, and drops them alike. Reached with `ctypes`
(`capset`, `prctl`), so no package is needed.
"""

from __future__ import annotations

import ctypes
import os
from typing import NoReturn

__all__ = ["drop_capabilities"]

_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _CAP_SETPCAP = 1, 2, 8
_KEPT = 1 << _CAP_DAC_OVERRIDE | 1 << _CAP_DAC_READ_SEARCH
"""What the worker keeps: it reads every file the kernel can, and writes where Landlock lets it as the kernel
could (a root kernel's `writable` folder may belong to another user)."""
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_libc = ctypes.CDLL(None, use_errno=True)
# Looked up in the kernel, once: a first lookup in each forked worker would cost it ~100 page copies.
_capget, _capset, _prctl = _libc.capget, _libc.capset, _libc.prctl


def _last_capability() -> int:
    with open("/proc/sys/kernel/cap_last_cap", "rb") as last:
        return int(last.read())


_LAST_CAPABILITY = _last_capability()


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_HEADER = _Header(_LINUX_CAPABILITY_VERSION_3, 0)
_SETS = (_Data * 2)()
"""Made in the kernel and filled in each worker: a ctypes type or structure made there would cost ~70 page copies."""


def drop_capabilities() -> None:
    """Keep `_KEPT` of what this process holds, and nothing a program it starts could take up again.

    Raises:
        OSError: The kernel refused a step (the message says which).
    """
    header, sets = ctypes.byref(_HEADER), ctypes.byref(_SETS)
    _check(_capget(header, sets), "capget")
    if _SETS[0].effective & 1 << _CAP_SETPCAP:
        # The bounding set caps what a program it starts may hold; emptied while the right to empty it is held.
        for number in range(_LAST_CAPABILITY + 1):
            if not _KEPT & 1 << number and _prctl(_PR_CAPBSET_DROP, number, 0, 0, 0) != 0:
                _refused(f"prctl(PR_CAPBSET_DROP, {number})")
    _check(_prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    kept = _SETS[0].permitted & _KEPT
    for word, value in ((0, kept), (1, 0)):
        _SETS[word].effective = _SETS[word].permitted = value
        _SETS[word].inheritable = 0
    _check(_capset(header, sets), "capset")


def _check(result: int, doing: str) -> None:
    if result != 0:
        _refused(doing)


def _refused(doing: str) -> NoReturn:
    number = ctypes.get_errno()
    raise OSError(number, f"{doing} failed: {os.strerror(number)}")
