"""The `ioctl` requests the file guards judge on Linux: those that change a file's metadata, and those that type
into a terminal. Shared by the in-process guard (`_paths.py`) and the isolated child's seccomp filter.

A request number packs its direction, its argument's size, a type byte naming the driver or filesystem that
defines it, and a number. The filesystems' own requests (flags, version, verity, encryption, extents, and
those of btrfs, XFS and f2fs) are judged by their type byte, not one by one: their owner (and root owns much)
may send many of them through a descriptor opened only to read, and each kernel release adds more. A few that
only read, or that write only through a descriptor opened to write, stay allowed.
"""

from __future__ import annotations

__all__ = ["FILESYSTEM_TYPES", "READING", "TERMINAL", "changes_a_file"]

FILESYSTEM_TYPES = frozenset({0x66, 0x76, 0x58, 0x94, 0xF5})
"""`'f'` (generic and ext4), `'v'` (a file's version), `'X'` (XFS, and `FS_IOC_FSSETXATTR`), btrfs and f2fs."""
READING = frozenset({
    0x80086601, 0x80046601,  # FS_IOC_GETFLAGS, in its two sizes
    0x80087601, 0x80047601,  # FS_IOC_GETVERSION
    0x801C581F,  # FS_IOC_FSGETXATTR
    0xC020660B,  # FS_IOC_FIEMAP: where a file's blocks lie
    0x40049409, 0x4020940D,  # FICLONE, FICLONERANGE: write only into a descriptor opened to write
})
TERMINAL = frozenset({0x5412, 0x541C})
"""`TIOCSTI` and `TIOCLINUX`: what they type into a terminal runs there as if its user had typed it."""


def changes_a_file(request: int) -> bool:
    """Whether a request (as the operating system reads it: an unsigned 32-bit number) is a filesystem's own
    that may change the file its descriptor names."""
    return (request >> 8 & 0xFF) in FILESYSTEM_TYPES and request not in READING  # the type byte
