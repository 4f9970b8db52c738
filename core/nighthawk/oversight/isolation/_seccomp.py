"""A seccomp filter, the kernel's check of every system call a process makes, built as a BPF program.

Reached with `ctypes` (`prctl(PR_SET_SECCOMP)`), so no package is needed. The filter binds the calling
thread and every process it starts afterwards; nothing can lift it. It refuses (with `EPERM`, so that code
sees an ordinary `PermissionError`) what would reach beyond the walls: every new socket (a `socketpair` is
allowed) and every `connect`, `bind`, `listen` and `accept` (unless the network is allowed), tracing and reading other
processes, typing into a terminal (`TIOCSTI`), leaving the process group or the namespaces, mounting, kernel modules, BPF, `io_uring` (whose
requests the filter would not see) and raising resource limits. It also refuses every change of a file's mode, owner,
times, extended attributes or flags (and a filesystem's own `ioctl`s, and leases) wherever the file is (Landlock
walls what files hold and where they are named, not their metadata, and the filter cannot see a path), and System V
and POSIX IPC (shared memory, semaphores, message queues), ways into other processes that no file wall sees. Only
x86-64 is known to it, and a call newer than Linux 6.18 is refused as unknown.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform

from .._ioctls import FILESYSTEM_TYPES, READING, TERMINAL

__all__ = ["SUPPORTED", "compiled_filter", "install_filter"]

SUPPORTED = platform.machine() in ("x86_64", "AMD64")

_AUDIT_ARCH_X86_64 = 0xC000003E
_NEWEST = 469
"""`file_setattr`, the newest call of Linux 6.18. A newer call (and x32's numbers, from 0x40000000) is refused as
unknown (`ENOSYS`, which libraries read as "not on this kernel"): a deny list lets through what it has never
heard of, so nothing newer than the list passes unexamined."""
_NEW_NAMESPACES = 0x7E020080  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME

# x86-64 system call numbers.
_IOCTL, _SOCKET, _CLONE, _CLONE3, _PRLIMIT64 = 16, 41, 56, 435, 302
_FCNTL, _F_SETLEASE = 72, 1024
"""A lease on a file opened to read stalls every other process that opens it to write (45 s by default)."""
_SIGNALLING = ((62, 0, 1, (0, 1)), (200, 0, 1, (1,)), (234, 0, 2, (1,)))
"""`kill`, `tkill` and `tgkill`: the argument naming the target, the one naming the signal, and the targets
that are the worker itself (pid 1, its namespace's init, or 0, its group)."""
_SIGKILL = 9
_NETWORK = {"connect": 42, "accept": 43, "bind": 49, "listen": 50, "accept4": 288}
_DENIED = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "setpgid": 109,
    "setsid": 112, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "kexec_load": 246,
    "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176, "pidfd_open": 434,
    "pidfd_send_signal": 424, "pidfd_getfd": 438, "open_by_handle_at": 304, "keyctl": 250, "add_key": 248,
    "request_key": 249, "reboot": 169, "swapon": 167, "swapoff": 168, "iopl": 172, "ioperm": 173,
    "setrlimit": 160, "fanotify_init": 300, "settimeofday": 164, "clock_settime": 227, "open_tree_attr": 467,
}
"""Calls that reach other processes, the namespaces, mounts, the kernel itself or the clock."""
_ABSENT = {"inotify_init": 253, "inotify_init1": 294}
"""Calls answered as if the kernel had none (`ENOSYS`: a library watching files falls back to polling): a user has
128 inotify instances in all, and the child could take every one of the kernel's user's."""
_METADATA = {
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93, "lchown": 94,
    "fchownat": 260, "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280, "setxattr": 188,
    "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
    "setxattrat": 463, "removexattrat": 466, "file_setattr": 469,
}
"""Changing a file's mode, owner, times, extended attributes or flags. Landlock does not wall these, so that a
`chmod` would hand the user's private key to another local user, or a set-user-ID bit the model's program."""
_IPC = {
    "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220,
    "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "mq_open": 240, "mq_unlink": 241,
    "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
}
"""System V shared memory, semaphores and message queues, and POSIX message queues: like sockets, ways into the
memory or the input of other processes of the same user, which no file wall sees."""

# BPF opcodes and seccomp answers (uapi/linux/filter.h, uapi/linux/seccomp.h).
_LD_W_ABS, _JEQ_K, _JGE_K, _AND_K, _RET_K = 0x20, 0x15, 0x35, 0x54, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_NR, _ARCH = 0, 4


def _arg(index: int, high: bool = False) -> int:
    return 16 + 8 * index + (4 if high else 0)  # little-endian halves of `seccomp_data.args`


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Instruction))]


def _program(network: bool) -> list[tuple[int, int, int, int]]:
    refuse = _ERRNO | errno.EPERM
    code = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET_K, 0, 0, _KILL_PROCESS),  # another ABI's numbers mean other calls: never let one through
        (_LD_W_ABS, 0, 0, _NR),
        (_JGE_K, 0, 1, _NEWEST + 1),
        (_RET_K, 0, 0, _ERRNO | errno.ENOSYS),
        # clone3 passes its flags in memory the filter cannot read: glibc falls back to clone on ENOSYS.
        (_JEQ_K, 0, 1, _CLONE3),
        (_RET_K, 0, 0, _ERRNO | errno.ENOSYS),
    ]
    for number in (*_DENIED.values(), *_METADATA.values(), *_IPC.values(), *(() if network else _NETWORK.values())):
        code += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, refuse)]
    for number in _ABSENT.values():
        code += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, _ERRNO | errno.ENOSYS)]
    # Each block below ends in a return, so the accumulator holds the call's number wherever one is skipped.
    code += [
        (_JEQ_K, 0, 5, _CLONE),
        (_LD_W_ABS, 0, 0, _arg(0)),
        (_AND_K, 0, 0, _NEW_NAMESPACES),
        (_JEQ_K, 1, 0, 0),
        (_RET_K, 0, 0, refuse),
        (_RET_K, 0, 0, _ALLOW),
        # prlimit64 reads limits for everyone (glibc's getrlimit) but may set none.
        (_JEQ_K, 0, 6, _PRLIMIT64),
        (_LD_W_ABS, 0, 0, _arg(2)),
        (_JEQ_K, 0, 2, 0),
        (_LD_W_ABS, 0, 0, _arg(2, high=True)),
        (_JEQ_K, 1, 0, 0),
        (_RET_K, 0, 0, refuse),
        (_RET_K, 0, 0, _ALLOW),
        *_ioctl_block(refuse),
        (_JEQ_K, 0, 4, _FCNTL),
        (_LD_W_ABS, 0, 0, _arg(1)),
        (_JEQ_K, 1, 0, _F_SETLEASE),
        (_RET_K, 0, 0, _ALLOW),
        (_RET_K, 0, 0, refuse),
    ]
    # The worker is its namespace's init, which the kernel keeps from a SIGKILL of its own: end it here.
    for number, target, signal, own in _SIGNALLING:
        count = len(own)
        code += [(_JEQ_K, 0, 5 + count, number), (_LD_W_ABS, 0, 0, _arg(signal)), (_JEQ_K, 0, 1 + count, _SIGKILL),
                 (_LD_W_ABS, 0, 0, _arg(target))]
        code += [(_JEQ_K, count - index, 0, pid) for index, pid in enumerate(own)]
        code += [(_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, _KILL_PROCESS)]
    if not network:
        # No socket at all, Unix ones included: `sendto` a path needs no `connect` (to /dev/log, say).
        # `socketpair`, which asyncio's loop uses, makes a pair joined to nothing else and stays allowed.
        code += [(_JEQ_K, 0, 1, _SOCKET), (_RET_K, 0, 0, _ERRNO | errno.EACCES)]
    return [*code, (_RET_K, 0, 0, _ALLOW)]


def _ioctl_block(refuse: int) -> list[tuple[int, int, int, int]]:
    """With the call's number in the accumulator: an `ioctl` typing into a terminal, or a filesystem's own
    request that may change a file (`_ioctls.py`), is refused; any other call skips the block."""
    first = [*sorted(TERMINAL), *sorted(READING)]
    tested = len(first) + 1 + len(FILESYSTEM_TYPES)  # the requests, the mask, the types
    code: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _arg(1))]  # an `unsigned int`: the low half is all
    for index, request in enumerate(first):
        to_refuse = tested - index  # a jump counts the instructions it skips: to the last of the two returns
        code.append((_JEQ_K, to_refuse if request in TERMINAL else to_refuse - 1, 0, request))
    code.append((_AND_K, 0, 0, 0xFF00))
    for index, kind in enumerate(sorted(FILESYSTEM_TYPES), start=len(first) + 1):
        code.append((_JEQ_K, tested - index, 0, kind << 8))
    code += [(_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, refuse)]
    return [(_JEQ_K, 0, len(code), _IOCTL), *code]


_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_libc = ctypes.CDLL(None, use_errno=True)


@functools.cache
def compiled_filter(*, network: bool) -> ctypes.Structure:
    """The filter as the kernel takes it, built once in the kernel's process: each child, forked with it in
    its memory, only installs it."""
    code = _program(network)
    instructions = (_Instruction * len(code))(*(_Instruction(*row) for row in code))
    return _Program(len(code), instructions)  # which keeps `instructions` alive (ctypes' `_objects`)


def install_filter(*, network: bool) -> None:
    """Put the filter on this thread and every process it starts (`no_new_privs` must be set first).

    Raises:
        OSError: The kernel refused the filter (no seccomp, or not allowed here).
    """
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(compiled_filter(network=network)), 0, 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"prctl(PR_SET_SECCOMP) failed: {os.strerror(number)}")
