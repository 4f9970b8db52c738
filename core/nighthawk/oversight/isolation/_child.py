"""The isolated child: it walls itself, then evaluates the step's model code as the kernel asks.

Forked from the kernel's user thread, the child has only that thread; the kernel's other threads (the
event loop, IOPub, logging) are gone, and any lock they held stays held. So the child never logs, writes to
the kernel's streams or delivers an event: it speaks to the kernel only through its channel, with its own
event loop; what the model's code prints there is sent along (`_output.py`). It runs the very code the kernel would (the `StepCode` the runner handed over: the tools' and
the outcome's own functions), with no oversight in force: the walls hold it.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import resource
import signal
import socket
import sys
import tempfile
from collections.abc import Mapping
from typing import Any, NoReturn

from ..._listeners import forget_listeners
from ...errors import StepAbortedError
from ...step._boundary import ToolBoundaryError
from ...step._context import StepContext
from ...threads._deadline import bounded_by
from .._kinds import Isolation
from .._oversee import forget_in_child
from ._capabilities import drop_capabilities
from ._channel import ChannelClosed, read_message, send_message
from ._descriptors import let_go_of_inherited
from ._landlock import abi_version, restrict_files
from ._mounts import devices_only_in_dev
from ._output import ChildOutput
from ._seccomp import install_filter
from ._shared_memory import make_shared_memory_private
from ._sessions import StepCode, forget_all
from ._tree import enter_tree
from ._value_forms import dumps_value
from ._values import unpickle_data

__all__ = ["run_child"]

_PR_SET_NO_NEW_PRIVS = 38
_libc = ctypes.CDLL(None)  # loaded in the kernel: the child, once forked, only calls it


def run_child(
    step: StepContext,
    step_code: StepCode,
    channel: socket.socket,
    isolation: Isolation,
    temp_dir: str,
    *,
    forked_into_namespace: bool,
) -> NoReturn:
    """The forked child's whole life: wall itself, say so (or say what is missing), then serve."""
    # What the kernel had is never garbage here: a collection would touch, and so copy, every page of it.
    gc.freeze()
    try:
        enter_tree(channel, isolation.processes, isolation.cpu_seconds, forked_into_namespace=forked_into_namespace)
        output = _wall(channel, isolation, temp_dir)
    except Exception as exc:  # noqa: BLE001 - told to the kernel, which refuses the step
        send_message(channel, ("unavailable", str(exc)))
        os._exit(0)
    send_message(channel, ("ready",))
    worker = os.getpid()
    forget_all()
    forget_in_child()
    forget_listeners()
    loop = asyncio.new_event_loop()
    asyncio.events._set_running_loop(None)  # the kernel's loop on this thread is not ours
    with bounded_by(None):  # the kernel keeps the wall-time budget and kills the child at its end
        while True:
            try:
                request = read_message(channel)
            except ChannelClosed:
                os._exit(0)
            answer = _answer(step, step_code, loop, request)
            if os.getpid() != worker:
                os._exit(0)  # a copy the model's code forked: only the worker answers
            if (printed := output.taken()) is not None:
                send_message(channel, ("output", *printed))
            send_message(channel, answer)


def _wall(channel: socket.socket, isolation: Isolation, temp_dir: str) -> ChildOutput:
    os.mkdir(temp_dir, 0o700)  # the private temporary folder the kernel named (it fails if the name is taken)
    make_shared_memory_private()  # first: a deleted file's mapping is opened again through the descriptors inherited
    highest = let_go_of_inherited({channel.fileno()})
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    output = ChildOutput(temp_dir)
    os.environ["TMPDIR"] = tempfile.tempdir = temp_dir
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file
    limit = _address_space() + isolation.memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # The worker, its namespace's init, ignores the SIGXCPU of the soft limit; the hard one is SIGKILL.
    resource.setrlimit(resource.RLIMIT_CPU, (isolation.cpu_seconds, isolation.cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_NOFILE, _open_files(highest))
    # No file grows past the bound: a loop printing (or writing) for ever would otherwise fill the disk, or the
    # memory behind a `/tmp` on tmpfs, which the address-space limit does not count. A write beyond fails with
    # EFBIG, as SIGXFSZ is ignored (Python ignores it already; a kernel's own code may not have left it so).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if isolation.file_mb is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (isolation.file_mb * 2**20, isolation.file_mb * 2**20))
    devices_only_in_dev()  # while it may still mount (Landlock walls `/dev` itself)
    drop_capabilities()  # a root kernel's worker is root too: what Landlock and seccomp do not cover goes with them
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_NO_NEW_PRIVS) failed")
    restrict_files(isolation.writable, private=temp_dir, network=isolation.network, abi=abi_version())
    os.setsid()  # off the kernel's terminal: a session of its own, with no controlling terminal
    install_filter(network=isolation.network)
    return output


def _open_files(highest: int) -> tuple[int, int]:
    """The bound on open files: 1024, or room for 256 more above the numbers the kernel's descriptors keep
    (a kernel may hold over a thousand), within the hard limit it has."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = max(1024, highest + 257)
    if hard != resource.RLIM_INFINITY:
        files = min(files, hard)
    return files, files


def _address_space() -> int:
    with open("/proc/self/statm", "rb") as statm:  # its first figure is VmSize, in pages; cheaper than status
        return int(statm.read().split()[0]) * resource.getpagesize()


def _answer(step: StepContext, code: StepCode, loop: asyncio.AbstractEventLoop, request: tuple[Any, ...]) -> tuple[Any, ...]:
    """One request's answer: `("rendered", envelope, preview, awaited, writes)` for a tool call,
    `("returned", value, writes, awaited)` for a return expression (values pickled apiece, so that the one
    that cannot be is named), or what went wrong."""
    kind, *rest = request
    before = {name: step.step_locals.get(name, _UNBOUND) for name in step.program.writes}
    try:
        if kind == "tool":
            tool_name, arguments = rest
            if tool_name == "nh_eval":
                value = loop.run_until_complete(code.evaluate(step, arguments["expression"]))
            else:
                value = loop.run_until_complete(code.assign(step, arguments["target_path"], arguments["expression"]))
            envelope, preview, awaited = code.render(step, value)
            return ("rendered", envelope, preview, awaited, _writes(step, before))
        resolution = loop.run_until_complete(code.resolve(rest[0], step))
        return ("returned", _pickled("the return value", resolution.value), _writes(step, before), resolution.awaited)
    except ToolBoundaryError as exc:
        return ("tool_error", exc.kind, exc.message, exc.guidance)
    except StepAbortedError as exc:
        return ("aborted", str(exc))
    except Exception as exc:  # noqa: BLE001 - the kernel raises it as the step's error
        return ("failed", type(exc).__name__, str(exc))


_UNBOUND = object()


def _writes(step: StepContext, before: Mapping[str, object]) -> dict[str, bytes]:
    """The write bindings this request (re)bound, pickled for the kernel. One that cannot be is put back as
    it was, so that the child and the kernel stay agreed, and the model is told why."""
    changed: dict[str, bytes] = {}
    for name, old in before.items():
        value = step.step_locals.get(name, _UNBOUND)
        if value is old:
            continue
        try:
            changed[name] = _pickled(f"`{name}`", value)
        except ToolBoundaryError:
            if old is _UNBOUND:
                del step.step_locals[name]
            else:
                step.step_locals[name] = old
            raise
    return changed


def _pickled(what: str, value: object) -> bytes:
    try:
        data = dumps_value(value)
        # Read back here as the kernel will: what it would refuse is refused now, so that the binding is put back
        # in the child too (the two stay agreed) and the model hears why at once.
        unpickle_data(data)
    except Exception as exc:
        raise ToolBoundaryError(
            "execution",
            f"{what} holds {type(value).__name__} {value!r:.80}, which cannot be sent from the isolated child "
            f"to the kernel ({type(exc).__name__}: {exc})",
            "Bind a plain value (numbers, text, containers, arrays, DataFrames, your own classes); not another package's "
            "object, a function, a generator or an open file.",
        ) from exc
    return data
