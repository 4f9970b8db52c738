"""Memory the kernel shares (a file mapped to write, anonymous shared memory, a `multiprocessing` shared block,
System V shared memory) reaches an isolated step's child as its own copy: the child reads what the kernel
holds, and what it writes there changes neither the kernel's values nor the file, in a step alone and in a
map's waves alike. Before, a fork kept such mappings shared: `np.memmap(path, mode="r+")` in the notebook let
the model's code write the file outside the walls, with no `open` for Landlock to judge."""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
from collections.abc import Iterator
from multiprocessing import shared_memory
from pathlib import Path

import numpy as np
import pytest

import isolated_maps
import isolated_steps
from isolated_maps import ITEMS, kernel_forks, run_map, together
from isolated_steps import run_isolated
from nighthawk.oversight.isolation import _shared_memory

__all__ = ["kernel_forks"]  # a fixture, used by name

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")

_IPC_PRIVATE, _IPC_CREAT, _IPC_RMID = 0, 0o1000, 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_libc.shmdt.argtypes = [ctypes.c_void_p]


def share(monkeypatch: pytest.MonkeyPatch, **values: object) -> None:
    """Put values where the model's code of a step and of a map's item reads them (their functions' globals)."""
    for module in (isolated_steps, isolated_maps):
        for name, value in values.items():
            monkeypatch.setattr(module, name, value, raising=False)


@pytest.fixture
def memmap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, np.memmap]]:
    path = tmp_path / "kept" / "features.dat"
    path.parent.mkdir()
    np.arange(8, dtype="int64").tofile(path)
    features = np.memmap(path, dtype="int64", mode="r+")
    share(monkeypatch, features=features)
    yield path, features
    del features


def test_a_file_the_kernel_mapped_to_write_is_not_written_by_the_child(memmap: tuple[Path, np.memmap]) -> None:
    path, features = memmap
    read = run_isolated("nh_eval", "(features.__setitem__(0, 999), int(features[0]), int(features[7]))")
    assert '"value": [null,999,7]' in read  # the child wrote its own copy, and read the file's values
    assert int(features[0]) == 0
    assert np.fromfile(path, dtype="int64").tolist() == list(range(8))


def test_anonymous_shared_memory_of_the_kernel_is_not_written_by_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    block = mmap.mmap(-1, 8192)
    block[:6] = b"kernel"
    share(monkeypatch, block=block)
    read = run_isolated("nh_eval", "(block.__setitem__(slice(0, 6), b'model!'), bytes(block[:6]))")
    assert "model!" in read
    assert block[:6] == b"kernel"


def test_a_multiprocessing_shared_block_is_not_written_by_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    block = shared_memory.SharedMemory(create=True, size=4096)
    try:
        block.buf[:6] = b"kernel"
        share(monkeypatch, block=block)
        read = run_isolated("nh_eval", "(block.buf.__setitem__(slice(0, 6), b'model!'), bytes(block.buf[:6]))")
        assert "model!" in read
        assert bytes(block.buf[:6]) == b"kernel"
    finally:
        block.close()
        block.unlink()


def test_system_v_shared_memory_can_be_neither_attached_nor_written(monkeypatch: pytest.MonkeyPatch) -> None:
    segment = _libc.shmget(_IPC_PRIVATE, 4096, _IPC_CREAT | 0o600)
    assert segment >= 0
    held = _libc.shmat(segment, None, 0)
    try:
        ctypes.memmove(held, b"kernel", 6)
        share(monkeypatch, segment=segment, held=held)
        attach = (
            "(l := __import__('ctypes').CDLL(None, use_errno=True), l.shmat(segment, None, 0), __import__('ctypes').get_errno(), "
            "__import__('ctypes').memmove(held, b'model!', 6), __import__('ctypes').string_at(held, 6))"
        )
        read = run_isolated("nh_eval", attach)
        assert ",-1,1," in read  # shmat refused: EPERM
        assert "model!" in read  # the kernel's own attachment, written in the child's copy
        assert ctypes.string_at(held, 6) == b"kernel"
    finally:
        _libc.shmdt(held)
        _libc.shmctl(segment, _IPC_RMID, None)


def test_a_memmap_larger_than_the_machines_memory_is_readable_in_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "huge.dat"
    with path.open("wb") as file:
        file.truncate(64 * 2**30)  # sparse: 64 GiB that take no room
    huge = np.memmap(path, dtype="uint8", mode="r+")
    share(monkeypatch, huge=huge)
    read = run_isolated("nh_eval", "(huge.__setitem__(0, 7), int(huge[0]), int(huge[-1]))")
    assert '"value": [null,7,0]' in read
    assert huge[0] == 0


def test_a_mapping_the_child_cannot_open_again_by_itself_is_opened_through_the_descriptor_the_kernel_holds(
    memmap: tuple[Path, np.memmap], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An ordinary user's child cannot open /proc/self/map_files, and a deleted file has no name to open.
    monkeypatch.setattr(_shared_memory, "_opened_again", lambda mapping: None)
    path, features = memmap
    read = run_isolated("nh_eval", "(features.__setitem__(0, 999), int(features[0]))")
    assert '"value": [null,999]' in read
    assert np.fromfile(path, dtype="int64").tolist() == list(range(8))


def test_shared_memory_with_no_file_to_open_again_is_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_shared_memory, "_opened_again", lambda mapping: None)
    block = mmap.mmap(-1, 8192)
    block[:6] = b"kernel"
    share(monkeypatch, block=block)
    read = run_isolated("nh_eval", "(bytes(block[:6]), block.__setitem__(slice(0, 6), b'model!'), bytes(block[:6]))")
    assert "kernel" in read and "model!" in read
    assert block[:6] == b"kernel"


def test_a_copied_mapping_of_a_file_truncated_under_it_is_read_up_to_the_files_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As an ordinary user, a deleted file's mapping whose descriptor is gone can only be copied; its pages past
    # the file's end would end the copy with SIGBUS, the whole step with "crashed". (`mmap` keeps a descriptor of
    # its own: it is hidden here.)
    monkeypatch.setattr(_shared_memory, "_opened_again", lambda mapping: None)
    monkeypatch.setattr(_shared_memory, "_inherited_files", dict)
    path = tmp_path / "two_pages.bin"
    path.write_bytes(b"kernel" + bytes(8192 - 6))
    with path.open("r+b") as file:
        block = mmap.mmap(file.fileno(), 8192)
    os.truncate(path, 4096)  # its second page now lies past the file's end
    share(monkeypatch, block=block)
    read = run_isolated("nh_eval", "(bytes(block[:6]), bytes(block[4096:4098]))")
    assert "IsolationError" not in read
    assert "b'kernel'" in read and "b'\\\\x00\\\\x00'" in read  # past the file's end, the copy reads zeros
    assert path.read_bytes()[:6] == b"kernel"


def test_shared_memory_too_large_to_copy_refuses_the_step_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_shared_memory, "_opened_again", lambda mapping: None)
    monkeypatch.setattr(_shared_memory, "_COPY_LIMIT", 4096)
    block = mmap.mmap(-1, 8192)
    block[:6] = b"kernel"
    share(monkeypatch, block=block)
    read = run_isolated("nh_eval", "block.__setitem__(slice(0, 6), b'model!')")
    assert read.startswith("IsolationUnavailableError")
    assert "/dev/zero (deleted)" in read and "(8,192 bytes)" in read and "over the 4,096 bytes the child copies" in read
    assert block[:6] == b"kernel"


def test_the_items_of_an_isolated_map_write_their_own_copies_of_shared_memory(
    memmap: tuple[Path, np.memmap], kernel_forks: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each fork of the kernel makes its memory private once: a wave for all its workers, a lone worker for itself.
    done = tmp_path / "made private"
    make_private = _shared_memory._shared_mappings

    def noting() -> list[object]:
        with done.open("a") as note:  # before the walls: any file may be written
            note.write(f"{os.getpid()}\n")
        return make_private()

    monkeypatch.setattr(_shared_memory, "_shared_mappings", noting)
    path, features = memmap
    result = run_map("shared memory", together(lambda _: [], lambda _: "str(features.__setitem__(0, 999) or features[0])"))
    assert list(result) == ["999"] * ITEMS
    assert len(kernel_forks) < ITEMS
    assert len(done.read_text().splitlines()) == len(kernel_forks)
    assert int(features[0]) == 0
    assert np.fromfile(path, dtype="int64").tolist() == list(range(8))
