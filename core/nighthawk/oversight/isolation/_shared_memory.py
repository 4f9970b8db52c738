"""Memory the kernel shares with other processes or with a file, made the isolated worker's own before its walls.

A fork keeps shared mappings shared: a file mapped to write (`np.memmap(path, mode="r+")`, `mmap.mmap(fd, n)`),
a `multiprocessing.shared_memory` block, Ray's object store. Written in the worker, they would change the file
outside the walls (no `open` for Landlock to judge) and the values the kernel and other processes hold. So the
worker maps each one again over itself, privately, from the same file opened only to read: it reads what it
read before, and what it writes stays its own, like the rest of its memory (and cannot be made shared again).
A shared mapping with no file it can open again is copied into private memory (anonymous shared memory of an
ordinary user, up to 64 MiB; a larger one refuses the step), and a device's (a GPU's, unusable in a fork anyway)
is taken away.

The shared mappings are found with `PROCMAP_QUERY` (Linux 6.11; isolation needs 6.14), one `ioctl` a mapping,
without reading the whole of `/proc/self/maps` (a millisecond for a kernel with pandas loaded).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from dataclasses import dataclass
from typing import NoReturn

__all__ = ["make_shared_memory_private"]

_PROCMAP_QUERY = 0xC0686611
_QUERY_SHARED, _QUERY_COVERING_OR_NEXT = 0x08, 0x10
_MAP_PRIVATE, _MAP_FIXED, _MAP_ANONYMOUS, _MAP_NORESERVE = 0x02, 0x10, 0x20, 0x4000
_COPY_LIMIT = 64 * 2**20
"""The most shared memory with no file to map again (an ordinary user's `mmap.mmap(-1, n)`) a worker copies: a
copy reads every page, and so gives memory to the pages never written; more is refused, never left shared."""
_PROT_READ, _PROT_WRITE = 0x1, 0x2
_MREMAP_MAYMOVE, _MREMAP_FIXED = 1, 2
_MAP_FAILED = ctypes.c_void_p(-1).value


class _Query(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint64), ("query_flags", ctypes.c_uint64), ("query_addr", ctypes.c_uint64),
        ("vma_start", ctypes.c_uint64), ("vma_end", ctypes.c_uint64), ("vma_flags", ctypes.c_uint64),
        ("vma_page_size", ctypes.c_uint64), ("vma_offset", ctypes.c_uint64), ("inode", ctypes.c_uint64),
        ("dev_major", ctypes.c_uint32), ("dev_minor", ctypes.c_uint32), ("vma_name_size", ctypes.c_uint32),
        ("build_id_size", ctypes.c_uint32), ("vma_name_addr", ctypes.c_uint64), ("build_id_addr", ctypes.c_uint64),
    ]


_libc = ctypes.CDLL(None, use_errno=True)
# Looked up and made in the kernel, once: each worker only calls and fills them.
_ioctl, _mmap, _mremap, _munmap, _mprotect = _libc.ioctl, _libc.mmap, _libc.mremap, _libc.munmap, _libc.mprotect
_mmap.restype = _mremap.restype = ctypes.c_void_p
_mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
_munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_NAME = ctypes.create_string_buffer(4096)
_QUERY = _Query(size=ctypes.sizeof(_Query), query_flags=_QUERY_SHARED | _QUERY_COVERING_OR_NEXT, vma_name_addr=ctypes.addressof(_NAME))
_QUERY_REFERENCE = ctypes.byref(_QUERY)


@dataclass(frozen=True)
class _Mapping:
    start: int
    end: int
    protection: int
    offset: int
    device: int
    inode: int
    name: str

    @property
    def link(self) -> str:
        """Its `/proc/self/map_files` link, which root may follow to the mapped file (a deleted one too)."""
        return f"/proc/self/map_files/{self.start:x}-{self.end:x}"

    def __str__(self) -> str:
        return f"{self.name or 'anonymous memory'} at {self.start:#x}"


_made_private = False
"""Set in a wave once it has made its memory private: its workers, forked from it, have nothing left to do."""


def make_shared_memory_private() -> None:
    """In a worker before its walls (or in the wave that forks it): no mapping of its memory is shared with
    anything outside it.

    Raises:
        OSError: A shared mapping could be neither made private nor taken away (the message names it).
    """
    global _made_private
    if _made_private:
        return
    inherited: dict[tuple[int, int], int] | None = None  # listed once, when a mapping first needs it
    for mapping in _shared_mappings():
        if _is_device(mapping):  # told without opening it: opening a device (a GPU's) acts on it
            _take_away(mapping)
            continue
        fd = _opened_again(mapping)
        if fd is None:
            inherited = _inherited_files() if inherited is None else inherited
            fd = _reopened(mapping, inherited)
        _make_private(mapping, fd)
    _made_private = True


def _make_private(mapping: _Mapping, fd: int | None) -> None:
    """Map `mapping` again privately from `fd` (closed here), or else copy it."""
    size = mapping.end - mapping.start
    if fd is not None:
        try:
            # Without a reservation, as the shared mapping had none: a 64 GiB memmap fits on a smaller machine.
            flags = _MAP_PRIVATE | _MAP_FIXED | _MAP_NORESERVE
            if _mmap(mapping.start, size, mapping.protection, flags, fd, mapping.offset) != _MAP_FAILED:
                return None
        finally:
            os.close(fd)
    if not mapping.protection & _PROT_READ:
        return _take_away(mapping)  # nothing there the model's code could read
    if size > _COPY_LIMIT:
        raise OSError(
            errno.ENOMEM,
            f"the kernel shares {mapping} ({size:,} bytes) with no file the child could map again privately, and it "
            f"is over the {_COPY_LIMIT:,} bytes the child copies; close it, or map a file instead",
        )
    return _copy_privately(mapping)


def _take_away(mapping: _Mapping) -> None:
    if _munmap(mapping.start, mapping.end - mapping.start) != 0:
        _refused(f"unmapping {mapping}")


def _shared_mappings() -> list[_Mapping]:
    maps = os.open("/proc/self/maps", os.O_RDONLY | os.O_CLOEXEC)
    found: list[_Mapping] = []
    try:
        while True:
            _QUERY.vma_name_size = len(_NAME) if _QUERY.vma_name_addr else 0  # in and out: the name's length
            if _ioctl(maps, _PROCMAP_QUERY, _QUERY_REFERENCE) != 0:
                number = ctypes.get_errno()
                if number == errno.ENOENT:
                    return found  # no shared mapping after the last
                if number == errno.ENAMETOOLONG and _QUERY.vma_name_addr:
                    _QUERY.vma_name_addr = 0  # asked again without its name: its address and file's numbers do
                    continue
                _refused("listing the shared mappings (PROCMAP_QUERY)")
            found.append(_Mapping(
                start=_QUERY.vma_start, end=_QUERY.vma_end, protection=_QUERY.vma_flags & 0x7, offset=_QUERY.vma_offset,
                device=os.makedev(_QUERY.dev_major, _QUERY.dev_minor), inode=_QUERY.inode,
                name=os.fsdecode(_NAME.value) if _QUERY.vma_name_addr and _QUERY.vma_name_size else "",
            ))
            _QUERY.query_addr, _QUERY.vma_name_addr = _QUERY.vma_end, ctypes.addressof(_NAME)
    finally:
        os.close(maps)
        _QUERY.query_addr, _QUERY.vma_name_addr = 0, ctypes.addressof(_NAME)


def _opened_again(mapping: _Mapping) -> int | None:
    """The mapped file opened again to read only: through `/proc/self/map_files` (which root may open, deleted
    files included), or by its name when that still names the same file."""
    candidates = [mapping.link]
    if mapping.name.startswith("/") and not mapping.name.endswith(" (deleted)"):
        candidates.append(mapping.name)
    for path in candidates:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        found = os.fstat(fd)
        if (found.st_dev, found.st_ino) == (mapping.device, mapping.inode):
            return fd
        os.close(fd)
    return None


def _inherited_files() -> dict[tuple[int, int], int]:
    """The files the worker's inherited descriptors are open on, by device and inode."""
    files: dict[tuple[int, int], int] = {}
    for entry in os.listdir("/proc/self/fd"):
        try:
            found = os.fstat(int(entry))
        except OSError:
            continue  # the listing's own descriptor, closed by now
        files.setdefault((found.st_dev, found.st_ino), int(entry))
    return files


def _reopened(mapping: _Mapping, inherited: dict[tuple[int, int], int]) -> int | None:
    """A descriptor the kernel holds on the mapped file (a deleted file's or a memfd's too), opened again to read
    only through its `/proc/self/fd` link."""
    held = inherited.get((mapping.device, mapping.inode))
    if held is None:
        return None
    try:
        return os.open(f"/proc/self/fd/{held}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _is_device(mapping: _Mapping) -> bool:
    """Whether a mapping is a device's (a GPU's, whose memory a fork cannot use anyway): the file its
    `/proc/self/map_files` link names (which root may follow), or else a `/dev` name that still names a device."""
    candidates = [mapping.link]
    if mapping.name.startswith("/dev/") and not mapping.name.startswith(("/dev/shm/", "/dev/zero")):
        candidates.append(mapping.name.removesuffix(" (deleted)"))
    for path in candidates:
        try:
            found = os.stat(path)
        except OSError:
            continue
        return stat.S_ISCHR(found.st_mode) or stat.S_ISBLK(found.st_mode)
    return False


def _copy_privately(mapping: _Mapping) -> None:
    """Copy a shared mapping with no file to open into private memory, and move the copy over it."""
    size = mapping.end - mapping.start
    copy = _mmap(None, size, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
    if copy == _MAP_FAILED:
        _refused(f"copying {mapping}")
    _read_own_memory(mapping.start, (ctypes.c_char * size).from_address(copy))
    if mapping.protection != _PROT_READ | _PROT_WRITE and _mprotect(copy, size, mapping.protection) != 0:
        _refused(f"protecting the copy of {mapping}")
    if _mremap(copy, size, size, _MREMAP_MAYMOVE | _MREMAP_FIXED, mapping.start) == _MAP_FAILED:
        _refused(f"moving the copy of {mapping} over it")


def _read_own_memory(start: int, into: ctypes.Array[ctypes.c_char]) -> None:
    """Copy this process's memory from `start` into `into` through `/proc/self/mem`, which answers a page that
    cannot be read with an error where a plain copy would take a SIGBUS: a file truncated under its shared
    mapping has pages past its end. Those (and whatever follows them) stay zeros in the copy."""
    memory = os.open("/proc/self/mem", os.O_RDONLY | os.O_CLOEXEC)
    view = memoryview(into).cast("B")
    done = 0
    try:
        while done < len(view):
            try:
                read = os.preadv(memory, [view[done:]], start + done)
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
                return
            if read == 0:
                return
            done += read
    finally:
        view.release()
        os.close(memory)


def _refused(doing: str) -> NoReturn:
    number = ctypes.get_errno()
    raise OSError(number, f"{doing} failed ({os.strerror(number)}): the kernel's shared memory would stay shared")
