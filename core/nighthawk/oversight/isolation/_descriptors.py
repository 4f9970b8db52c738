"""What a fork of the kernel (an isolated step's worker, a wave) does with the descriptors it inherited."""

from __future__ import annotations

import contextlib
import os

__all__ = ["let_go_of_inherited"]


def let_go_of_inherited(keep: set[int]) -> int:
    """Point every inherited descriptor but those of `keep` at /dev/null, and return the highest number in
    use. A copy held here would keep the kernel's files, pipes and connections open after the kernel closed
    them. They are not closed: the kernel's objects copied here would then close or write to whatever took
    their numbers next (a file the model's code opened)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    highest = devnull
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        highest = max(highest, fd)
        if fd not in keep and fd != devnull:
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed already
                os.dup2(devnull, fd)
    os.close(devnull)
    return highest
