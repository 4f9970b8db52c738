"""Isolated steps: the model's code of a step runs in a child process behind the operating system's walls.

`isolated()` builds the oversight. Under it a step forks a child at its first call of model code
(`_parent.py`, entered by the runner), alone or with the steps asking at the same moment through one wave
process (`_waves.py`; `_reaping.py` reaps what the kernel forked); the child enters a pid namespace with a bounded
number of processes and offers itself first to the out-of-memory killer (`_tree.py`), makes the memory it shares
with the kernel its own (`_shared_memory.py`), closes what it inherited, limits its resources, opens no device
but `/dev`'s (`_mounts.py`), drops its capabilities (`_capabilities.py`) and walls itself with Landlock
(`_landlock.py`) and a seccomp filter (`_seccomp.py`),
then evaluates every `nh_eval`, `nh_assign` and return expression of the step (`_child.py`). Requests and
answers cross a socket pair (`_channel.py`), values crossing as calls of the kernel's own builders of data (`_values.py` reads them, `_builders.py`,
`_python_values.py` and `_array_values.py` make them, `_value_forms.py` writes them), the temporary folder removed
by `_folders.py`, what the model's code prints travels with them (`_output.py`); the tools and the outcome find the step's child in
`_sessions.py`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .._kinds import Isolation, Oversight

__all__ = ["isolated"]


def isolated(
    writable: Iterable[str | os.PathLike[str]] = (),
    network: bool = False,
    *,
    memory_mb: int = 4096,
    cpu_seconds: int = 600,
    processes: int = 300,
    file_mb: int | None = 1024,
) -> Oversight:
    """Run the model's code of each step in a forked child walled by the kernel (Linux only).

    The child sees every live value (copy-on-write) and may read every file but devices (of `/dev`, only
    `null`, `zero`, `full`, `random`, `urandom` and `shm`: no terminal, keyboard or disk); it may change files only
    beneath `writable` and a private temporary folder, opens no socket unless `network` (then any, local Unix ones too), cannot
    signal, trace or reach other processes, and has at most `memory_mb` MiB more address space, `cpu_seconds`
    of CPU time and `processes` processes at once (the kernel bounds no lower than 300), and writes no file past
    its first `file_mb` MiB (in `writable` too, an existing larger file included: a write beyond fails with
    `OSError: File too large`; `None` sets no bound). What the model's code
    changes in place stays in the child: write
    bindings and the return value come back (pickled, validated in the kernel). Where the walls cannot be
    raised the step fails with `IsolationUnavailableError`: nothing falls back to running unwalled.
    """
    folders = tuple(os.path.realpath(os.fspath(folder)) for folder in writable)
    for folder in folders:
        if not os.path.isdir(folder):
            raise ValueError(f"`writable` folder {folder!r} does not exist; create it before isolating a step")
    bounds = {"memory_mb": memory_mb, "cpu_seconds": cpu_seconds, "processes": processes, "file_mb": file_mb}
    for name, value in bounds.items():
        if name == "file_mb" and value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 2**40:
            raise ValueError(f"`{name}` must be a positive integer (up to 2**40), got {value!r}")
    walls = Isolation(writable=folders, network=bool(network), **bounds)  # type: ignore[arg-type]
    return Oversight(name="isolated", isolation=walls)
