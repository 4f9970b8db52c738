"""The isolated child's seccomp filter, run on a small BPF interpreter: what it answers for a call, read the way
the kernel hands the call over (`struct seccomp_data`). The filter's own instructions are checked here on
every platform; `test_isolated_privileges.py` checks what the real kernel does with them."""

from __future__ import annotations

import errno
import struct

import pytest

from nighthawk.oversight.isolation import _seccomp

X86_64 = 0xC000003E
ALLOW, KILL, EPERM, ENOSYS = 0x7FFF0000, 0x80000000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
CHMOD, FCHMODAT2, SETXATTRAT, FILE_SETATTR, IOCTL, FCNTL, READ = 90, 452, 463, 469, 16, 72, 0


def answer(number: int, *args: int, network: bool = False, arch: int = X86_64) -> int:
    """What the filter returns for a call: `seccomp_data` is the number, the architecture, the instruction
    pointer and six 64-bit arguments, little-endian."""
    data = struct.pack("<iIQ6Q", number, arch, 0, *(*args, *[0] * (6 - len(args))))
    accumulator, at = 0, 0
    program = _seccomp._program(network)
    while True:
        code, jt, jf, k = program[at]
        at += 1
        if code == 0x20:  # load a word of the data
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif code == 0x54:  # and
            accumulator &= k
        elif code == 0x15:  # jump if equal
            at += jt if accumulator == k else jf
        elif code == 0x35:  # jump if greater or equal
            at += jt if accumulator >= k else jf
        elif code == 0x06:  # return
            return k
        else:
            raise AssertionError(f"an instruction this interpreter does not know: {code:#x}")


@pytest.mark.parametrize("number", [CHMOD, FCHMODAT2, SETXATTRAT, FILE_SETATTR])
def test_a_change_of_a_files_metadata_is_refused(number: int) -> None:
    assert answer(number, 0, 0o644) == EPERM


@pytest.mark.parametrize(
    "ioctl",
    [0x40086602, 0x40046602, 0x40087602, 0x401C5820, 0x40806685, 0x00006609],
    ids=["FS_IOC_SETFLAGS", "FS_IOC32_SETFLAGS", "FS_IOC_SETVERSION", "FS_IOC_FSSETXATTR", "FS_IOC_ENABLE_VERITY", "EXT4_IOC_MIGRATE"],
)
def test_a_filesystems_own_ioctl_is_refused(ioctl: int) -> None:
    assert answer(IOCTL, 3, ioctl) == EPERM


@pytest.mark.parametrize("ioctl", [0x5412, 0x541C, 0xFFFFFFFF_00005412], ids=["TIOCSTI", "TIOCLINUX", "TIOCSTI-high-bits"])
def test_typing_into_a_terminal_is_refused(ioctl: int) -> None:
    assert answer(IOCTL, 0, ioctl) == EPERM


@pytest.mark.parametrize(
    "ioctl",
    [0x5401, 0x5413, 0x541B, 0x80086601, 0x801C581F, 0xC020660B, 0x40049409],
    ids=["TCGETS", "TIOCGWINSZ", "FIONREAD", "FS_IOC_GETFLAGS", "FS_IOC_FSGETXATTR", "FS_IOC_FIEMAP", "FICLONE"],
)
def test_an_ioctl_that_reads_or_only_writes_an_open_file_is_allowed(ioctl: int) -> None:
    assert answer(IOCTL, 3, ioctl) == ALLOW


IPC = {
    "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220, "msgget": 68,
    "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242,
    "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
}
"""x86-64's numbers, from its unistd_64.h."""


@pytest.mark.parametrize("number", IPC.values(), ids=IPC.keys())
def test_system_v_and_posix_ipc_are_refused(number: int) -> None:
    assert answer(number, 0, 0, 0) == EPERM


def test_a_lease_on_a_file_is_refused_and_other_fcntls_allowed() -> None:
    assert answer(FCNTL, 3, 1024, 0) == EPERM  # F_SETLEASE
    assert answer(FCNTL, 3, 1, 0) == ALLOW  # F_GETFD


def test_an_ordinary_call_is_allowed_and_another_abis_numbers_end_the_process() -> None:
    assert answer(READ, 0, 0, 10) == ALLOW
    assert answer(READ | 0x40000000) == ENOSYS  # x32
    assert answer(READ, arch=0xC00000B7) == KILL  # aarch64's numbers mean other calls


@pytest.mark.parametrize("number", [470, 512, 0x3FFFFFFF], ids=["next", "x32-range", "largest"])
def test_a_call_newer_than_the_filter_is_refused_as_unknown(number: int) -> None:
    # Linux 6.18's newest is 469: a deny list would let a later kernel's new calls through unexamined.
    assert answer(number, 0, 0, 0) == ENOSYS


def test_open_tree_attr_is_refused() -> None:
    assert answer(467, 0, 0, 0) == EPERM


@pytest.mark.parametrize("number", [253, 294], ids=["inotify_init", "inotify_init1"])
def test_inotify_is_answered_as_absent(number: int) -> None:
    # A user has 128 instances in all; a library that watches files falls back to polling on ENOSYS.
    assert answer(number, 0, 0, 0) == ENOSYS


def test_a_socket_is_refused_unless_the_network_is_allowed() -> None:
    assert answer(41, 2, 1, 0) != ALLOW
    assert answer(41, 2, 1, 0, network=True) == ALLOW
