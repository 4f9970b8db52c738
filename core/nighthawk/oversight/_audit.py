"""Policies enforced at run time: Python's audit events (PEP 578), checked while model-written code runs.

Reading an expression cannot find every way to delete a file (`[os.remove][0](p)`, `getattr(os, "re" +
"move")(p)`, a user function that deletes). Python itself reports each such operation, however it was
reached, as an audit event (`open` with its flags, `os.remove`, `subprocess.Popen`, `socket.connect`, ...),
and an audit hook that raises stops the operation before it happens.

This module is the hook and its checks, loaded with the first evaluation under a runtime guard, never at
`import nighthawk`. `_oversee.py` owns the context variable that says which guards are enforced on a
thread or task, and sets it around the evaluation of model-written code only; the hook, added once per
process (a hook cannot be removed), reads it and returns at once while it is empty: user code before and
after a step, other threads, and the provider's requests on the background loop (other tasks). A
synchronous evaluation is also recorded by thread, because model code can run a function in a fresh
`contextvars.Context()`, where the context variable is empty: while that thread runs nothing but model
code, an empty value falls back to the thread's (a value set on purpose, `NOT_ENFORCED`, does not).

Model code can also leave code behind that runs later, outside any guarded region: a method of a class it
made (`__repr__` when the result is shown, `__del__` when it is collected), a lambda it hands to a
callback or to a thread that was already running. Every function it makes has the namespace of its
evaluation for globals, which the guard marks with its guards (`GUARDS_NAME`); where nothing is enforced,
a checked operation called from such a function (found on the caller's stack) is held to those guards.

Two regions are held differently (`Enforcement.mode`). While Nighthawk handles a value the model's code
made (`handling`: the secret scan, validation, rendering), what the value's methods do is refused, even a
function of Python's such as `functools.partial(os.remove, p)`, but not the user's own functions called on
the way (a validator, a `__repr__`): the first frame up the stack that is neither the library's (the
standard library, installed packages) nor Nighthawk's decides. In the work of a step that guarded model
code started (`machinery`: a natural function it called), only functions the model made are held, found
above the step's own frames.

A refusal raises `OperationRefusedError` (a `PermissionError`) naming the operation, its target and the
policy, and is added to the region's refusals for the caller to record once the evaluation is over:
nothing is emitted from inside the hook.

Operations Python does not announce (a thread start on 3.11, ending the process, a function left to run
later, ...) are made to raise an event by the wrappers of `_announce.py`, installed with the hook.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from types import CodeType, FrameType
from typing import Any

from ..errors import OperationRefusedError
from ._announce import (
    DEFERRED,
    INTERPRETER_MODULES,
    POOL_WORK,
    PROCESS_END,
    SUBINTERPRETER,
    announce_loaded,
    announce_silent_operations,
    guarding_here,
    standing_in,
)
from ._kinds import GUARDS_NAME, NOT_ENFORCED, Enforcement, Refusal, RuntimeGuard
from ._paths import (
    CHANGED_PATHS,
    Check,
    check_chdir,
    check_change,
    check_ioctl,
    check_open,
    check_socket_file,
    check_sqlite,
    check_sqlite_handle,
    file_guard,
    opens_for_writing,
    refusal,
    sqlite_connection_type,
)
from ._written_modules import MODULE_IN_WRITABLE, announce_extension_modules, in_writable_folder, put_finder_first

__all__ = ["install"]

_GUIDANCE = (
    "Do not try another way to do the same; work with the values as they are, or end the step with a `raise` "
    "outcome if the task cannot be done without it."
)

_install_lock = threading.Lock()
_installed = False
_enforced: ContextVar[Enforcement | None] | None = None
"""The context variable the hook reads (owned by `_oversee.py`), once installed."""
_by_thread: dict[int, Enforcement] = {}
"""The enforcement of each thread's synchronous evaluation (owned by `_oversee.py`), once installed."""


def install(enforced: ContextVar[Enforcement | None], by_thread: dict[int, Enforcement]) -> None:
    """Add the audit hook, once per process: it enforces the guards `enforced` holds on each thread or task,
    or, where it holds nothing, those of the synchronous evaluation running on the thread (`by_thread`), or
    those of the model-made function that called (marked `GUARDS_NAME`)."""
    global _installed, _enforced, _by_thread
    if _installed:
        announce_loaded()
        put_finder_first(_enforcement_here)
        return
    with _install_lock:
        if _installed:
            return
        _enforced, _by_thread = enforced, by_thread
        announce_silent_operations(_enforcement_here, by_thread, enforced)
        announce_loaded()
        put_finder_first(_enforcement_here)
        announce_extension_modules(_enforcement_here)
        _connect_for_model_code()
        sys.addaudithook(_hook_reading(enforced, by_thread))
        _installed = True


# --- the hook -------------------------------------------------------------------------------------------


def _hook_reading(
    enforced: ContextVar[Enforcement | None], by_thread: dict[int, Enforcement]
) -> Callable[[str, tuple[object, ...]], None]:
    current = enforced.get
    thread = threading.get_ident

    def hook(event: str, args: tuple[object, ...]) -> None:
        # Called for every audited operation of the process, on every thread: the common case (nothing
        # enforced here) is one context-variable read, a test of an empty dict and a dict look-up.
        enforcement = current()
        if enforcement is None:
            if by_thread and (enforcement := by_thread.get(thread())) is not None:
                pass
            elif event in _CHECKS and (guards := _guards_of_caller(event, args, True)):
                enforcement = Enforcement(guards)  # outside any step: nowhere to record the refusal
            else:
                return
        if not enforcement.guards:
            # NOT_ENFORCED; or a step's own work (`machinery`), where only functions the model made are held
            if enforcement.mode != "machinery" or event not in _CHECKS:
                return
            if not (guards := _guards_of_caller(event, args, False)):
                return
            enforcement = Enforcement(guards)
        check = _CHECKS.get(event)
        if check is not None and (refusal := check(enforcement.guards, event, args)) is not None:
            if enforcement.mode == "handling" and _users_own_code():
                return  # the user's own function, which Nighthawk called while handling the model's value
            enforcement.refusals.append(refusal)
            raise OperationRefusedError(f"{refusal.message}\n{_GUIDANCE}")

    return hook


def _guards_of_caller(event: str, args: tuple[object, ...], whole_stack: bool) -> tuple[RuntimeGuard, ...]:
    """The guards of the innermost model-made function on the stack (none: `()`); with `whole_stack` false,
    only above the first frame of code that is neither the library's nor the model's (a step's own work)."""
    if event == "open" and not opens_for_writing(args):
        return ()  # the common event, which every guard allows: no need to look
    if event == "import" and args[0] not in INTERPRETER_MODULES:
        return ()
    try:
        frame: FrameType | None = sys._getframe(2)  # (`frame.f_code` and `id` would raise audit events in turn)
    except ValueError:
        return ()  # raised from C with no Python caller
    while frame is not None:
        guards = frame.f_globals.get(GUARDS_NAME)
        if guards is not None:
            return guards  # type: ignore[no-any-return]
        if (guards := _compiled_for_model_code(frame)) is not None:
            return guards
        if not whole_stack and (_nighthawks(frame.f_globals) or not _library(frame.f_globals)):
            return ()
        frame = frame.f_back
    return ()


def _users_own_code() -> bool:
    """Whether the operation is the user's own code at work while Nighthawk handles a model-made value: the
    first frame up the stack that is not the library's (the standard library, installed packages) is a
    function of the user's (a validator, a `__repr__`), not the model's nor Nighthawk's."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        namespace = frame.f_globals
        if GUARDS_NAME in namespace or _compiled_for_model_code(frame) is not None:
            return False
        if _nighthawks(namespace):
            return False  # Nighthawk's own frame, reached with no function of the user's in between
        if not _library(namespace):
            return True
        frame = frame.f_back
    return False


_compiled: dict[int, tuple[RuntimeGuard, ...]] = {}
"""Code that a library compiled and ran for guarded code (`timeit.Timer`, `code.InteractiveInterpreter`),
by `id` while it lives, with the guards: the functions it defines have the namespace the model gave them,
without the mark."""
_compiled_refs: dict[int, weakref.ref[CodeType]] = {}


def _remember_compiled(code: CodeType, guards: tuple[RuntimeGuard, ...]) -> None:
    pending = [code]
    while pending:
        made = pending.pop()
        key = id(made)
        if key in _compiled:
            continue
        _compiled[key] = guards
        _compiled_refs[key] = weakref.ref(made, lambda _, key=key: (_compiled.pop(key, None), _compiled_refs.pop(key, None)))
        pending.extend(constant for constant in made.co_consts if isinstance(constant, CodeType))


def _compiled_for_model_code(frame: FrameType) -> tuple[RuntimeGuard, ...] | None:
    """The guards of a frame running such code; only looked for where the namespace names no source file
    (a module's functions always do), as `frame.f_code` raises an audit event of its own."""
    if not _compiled or "__file__" in frame.f_globals:
        return None
    return _compiled.get(id(frame.f_code))


def _nighthawks(namespace: dict[str, Any]) -> bool:
    name = namespace.get("__name__")
    return isinstance(name, str) and name.partition(".")[0] in ("nighthawk", "nighthawk_ipython")


@functools.cache
def _library_folders() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    folders = {os.path.join(paths[key], "") for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple(folders | {os.path.join(os.path.realpath(folder), "") for folder in folders})


def _library(namespace: dict[str, Any]) -> bool:
    """Whether a frame with these globals runs code of the standard library or of an installed package."""
    source = namespace.get("__file__")
    return isinstance(source, str) and source.startswith(_library_folders())


# --- files (the checks are in `_paths.py`) ---------------------------------------------------------


def _connect_for_model_code() -> None:
    """Make `sqlite3.connect` give model code under a file guard a `ModelConnection` (user code keeps the
    usual one); a connection of any other type is refused to model code by `_check_sqlite_handle`."""
    import sqlite3  # here: loaded with the first guarded evaluation, never at `import nighthawk`

    original = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        if len(args) < 6 and "factory" not in kwargs and _file_guard_here():
            kwargs["factory"] = sqlite_connection_type()
        return original(*args, **kwargs)

    sqlite3.connect = sqlite3.dbapi2.connect = standing_in(original, connect)  # type: ignore[assignment]


def _enforcement_here() -> Enforcement | None:
    """What is enforced on this thread or task now (the context variable, else the thread's evaluation)."""
    enforcement = _enforced.get() if _enforced is not None else None
    return _by_thread.get(threading.get_ident()) if enforcement is None else enforcement


def _file_guard_here() -> bool:
    enforcement = _enforcement_here()
    return enforcement is not None and any(guard.files for guard in enforcement.guards)


# --- processes, threads, signals ------------------------------------------------------------------------


def _check_process(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    if event == POOL_WORK:
        return refusal(guards[0], f"handing work to a pool of processes ({args[0]})", "model-written code may not "
                       "run work in other processes under this policy (it would run there outside it)")
    target = f" ({_brief(args[0])})" if args else ""
    return refusal(guards[0], f"{event}{target}", "model-written code may not start processes under this policy "
                    "(a child process would run outside it)")


def _check_thread(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    if guarding_here():
        return None  # the thread runs under these guards (`_announce.py`)
    # A function the model made, run later outside any step, has no region whose guards a thread could carry.
    return refusal(guards[0], f"starting a thread ({event})", "model-written code may not start threads under "
                    "this policy (a thread would run without it); call the function directly")


def _check_signal(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    return refusal(guards[0], f"{event}{tuple(args)!r}", "model-written code may not send signals under this policy")


def _check_end(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    # A limit lowered on the process (CPU time, memory, open files) ends or breaks the kernel later.
    what = str(args[0]) if event == PROCESS_END else f"{event}{tuple(args)!r}"
    return refusal(guards[0], what, "model-written code may not end the process under this policy (the notebook "
                   "would lose everything it holds in memory)")


def _check_host(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    guard = file_guard(guards)
    return None if guard is None else refusal(guard, f"{event}{tuple(args)!r}", "model-written code may not rename the machine")


def _check_made_code(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    if event == "exec" and isinstance(args[0], CodeType) and os.path.isabs(source := args[0].co_filename):
        # (a relative name is no file's: `<string>`, `<nighthawk>`)
        if (found := _check_written_module(guards, MODULE_IN_WRITABLE, (source,))) is not None:
            return found
    if event == "object.__setattr__":
        if len(args) < 2 or args[1] != "__code__":
            return None
        what = "replacing the code of a function"
    else:
        try:
            frame = sys._getframe(2)  # the caller of `exec`, `eval` or `types.FunctionType`
        except ValueError:
            return None
        caller = frame.f_globals
        if event == "function.__new__" and GUARDS_NAME not in caller and _first_outside_library(frame):
            # A library that only passes the model's code through (`copyreg.__newobj__(FunctionType, code,
            # namespace)`): the function would run later with a namespace the model chose, unmarked.
            return refusal(guards[0], f"making a function ({event})", "model-written code may not make "
                           "functions from new code under this policy (they would run later without it)")
        if GUARDS_NAME not in caller:
            # A library making functions (`dataclasses`, `namedtuple`, `timeit`), or Nighthawk's own eval: what
            # a library runs for guarded code stays held to the guards wherever it runs later (an import's
            # module code does not: its functions have their module's namespace, which names its file).
            if event == "exec" and isinstance(args[0], CodeType) and not _nighthawks(caller) and (
                caller.get("__name__") != "importlib._bootstrap"
            ):
                _remember_compiled(args[0], guards)
            return None
        what = "running compiled code" if event == "exec" else "making a function"
    return refusal(guards[0], f"{what} ({event})", "model-written code may not make functions from new code under "
                   "this policy (they would run later without it); write the expression itself")


def _first_outside_library(frame: FrameType | None) -> bool:
    """Whether the first frame from `frame` up that is not the library's runs model-written code."""
    while frame is not None and _library(frame.f_globals) and not _nighthawks(frame.f_globals):
        frame = frame.f_back
    return frame is not None and (GUARDS_NAME in frame.f_globals or _compiled_for_model_code(frame) is not None)


def _check_code(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    if event.startswith("marshal."):
        try:
            caller = sys._getframe(2).f_globals.get("__name__")
        except ValueError:
            return None
        if caller in ("importlib._bootstrap_external", "importlib._bootstrap"):
            return None  # a module's cached bytecode, or a frozen module's (3.13: runpy), read by the import system
    return refusal(guards[0], f"making a code object ({event})", "model-written code may not build code objects "
                   "under this policy (a malformed one crashes the interpreter); write the expression itself")


def _check_interpreter(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    if event == "import" and args[0] not in INTERPRETER_MODULES:
        return None
    what = f"importing {args[0]}" if event == "import" else str(args[0]) if args else event
    return refusal(guards[0], f"{what} (another interpreter)", "model-written code may not make or use another "
                   "interpreter under this policy (it runs with none of this one's guards)")


def _check_written_module(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    guard = in_writable_folder(guards, args[0])
    return None if guard is None else refusal(
        guard, f"importing {args[0]}", "a module in a folder model-written code may write to runs as model code "
        "under this policy (its functions would run later without it); import it in your own code before the step"
    )


def _check_deferred(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    return refusal(guards[0], str(args[0]), "model-written code may not leave a function to run later under "
                    "this policy (it would run outside it); do the work now, in the step")


def _brief(value: object) -> str:
    text = repr(os.fsdecode(value) if isinstance(value, bytes) else value)
    return text if len(text) <= 120 else text[:120] + "..."


# --- network --------------------------------------------------------------------------------------------

_resolved_hosts: dict[str, frozenset[str]] = {}


def _check_network(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    if event in ("socket.sendto", "socket.sendmsg") and (len(args) < 2 or args[1] is None):
        return None  # a send on a connected socket: its connect was checked
    host, port = _endpoint(event, args)
    if not host and event in _LOOKUP_EVENTS:
        return None  # a passive look-up (no host) reaches nothing
    for guard in guards:
        if guard.network and not _allowed(guard.allow, host, port):
            target = host if port is None else f"{host}:{port}"
            allowed = f" (allowed: {', '.join(guard.allow)})" if guard.allow else ""
            return refusal(guard, f"{event} to {target}", f"model-written code may not use the network{allowed}")
    return None


def _check_connect(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    if len(args) > 1 and _process_server(args[1]):
        return _check_process(guards, "connecting to multiprocessing's fork server", (args[1],))
    return _check_network(guards, event, args)


def _process_server(address: object) -> bool:
    """Whether `address` is that of a fork server already running (multiprocessing's `forkserver`), which
    starts a process for whoever connects."""
    forkserver = sys.modules.get("multiprocessing.forkserver")
    server = getattr(forkserver, "_forkserver", None)
    running = getattr(server, "_forkserver_address", None)
    if running is None or not isinstance(address, str | bytes) or not address:
        return False
    named, listening = os.fsdecode(address), os.fsdecode(running)
    if named[0] == "\0" or listening[0] == "\0":  # an abstract address: spelled one way only
        return named == listening
    return os.path.realpath(named) == os.path.realpath(listening)  # `/tmp//x`, a link to it


def _check_bind(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    return check_socket_file(guards, event, args) or _check_network(guards, event, args)


def _endpoint(event: str, args: tuple[object, ...]) -> tuple[str, int | None]:
    """The host (or socket path) and port an event reaches."""
    match event:
        case "socket.getaddrinfo":
            host, port = args[0], args[1]
        case "socket.gethostbyname" | "socket.gethostbyaddr":
            host, port = args[0], None
        case "socket.getnameinfo":
            host, port = (args[0][0], args[0][1]) if isinstance(args[0], tuple) else (args[0], None)
        case _:  # connect, bind, sendto, sendmsg: (socket, address)
            address = args[1] if len(args) > 1 else None
            host, port = (address[0], address[1]) if isinstance(address, tuple) else (address, None)
    if isinstance(host, bytes):
        host = host.decode("idna", "replace")
    return ("" if host is None else str(host).lower()), (port if isinstance(port, int) else None)


def _allowed(allow: tuple[str, ...], host: str, port: int | None) -> bool:
    # No host in a connect or a send is not nowhere: `("", port)` is this machine (INADDR_ANY), as a listener
    # on 127.0.0.1 finds out; it is allowed only as `0.0.0.0` or `""` would be, by name.
    for entry in allow:
        allowed_host, allowed_port = _split(entry)
        if allowed_port is not None and port is not None and port != allowed_port:
            continue
        if host == allowed_host or host in _addresses(allowed_host):
            return True
    return False


def _split(entry: str) -> tuple[str, int | None]:
    """`("127.0.0.1", 8000)` for `127.0.0.1:8000`, `("::1", 8000)` for `[::1]:8000`, no port for a host."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    host, colon, port = entry.rpartition(":")
    if colon and port.isdigit() and ":" not in host:
        return host, int(port)
    return entry, None


def _addresses(host: str) -> frozenset[str]:
    """The addresses an allowed host name resolves to (looked up once; the checks are not enforced here)."""
    if host not in _resolved_hosts and _enforced is not None:
        import socket

        token = _enforced.set(NOT_ENFORCED)  # the look-up is ours, not the model's: not checked in turn
        try:
            found = frozenset(str(info[4][0]).lower() for info in socket.getaddrinfo(host, None))
        except OSError:
            found = frozenset()
        finally:
            _enforced.reset(token)
        _resolved_hosts[host] = found
    return _resolved_hosts.get(host, frozenset())


_PROCESS_EVENTS = (
    "subprocess.Popen", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty",
    "os.startfile", "pty.spawn", "_posixsubprocess.fork_exec", POOL_WORK,
)
_LOOKUP_EVENTS = ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo")
_NETWORK_EVENTS = ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", *_LOOKUP_EVENTS)

_CHECKS: dict[str, Check] = {
    "open": check_open,
    "os.chdir": check_chdir,
    "fcntl.ioctl": check_ioctl,
    "socket.sethostname": _check_host,
    "sqlite3.connect": check_sqlite,
    "sqlite3.connect/handle": check_sqlite_handle,
    **dict.fromkeys(CHANGED_PATHS, check_change),
    **dict.fromkeys(_PROCESS_EVENTS, _check_process),
    **dict.fromkeys(("_thread.start_new_thread", "_thread.start_joinable_thread"), _check_thread),
    **dict.fromkeys(
        ("os.kill", "os.killpg", "signal.pthread_kill", "signal.raise_signal", "signal.pidfd_send_signal",
         "signal.alarm", "signal.setitimer"),
        _check_signal,
    ),
    **dict.fromkeys(("os._exit", "os.abort", PROCESS_END, "resource.setrlimit", "resource.prlimit"),
                    _check_end),
    DEFERRED: _check_deferred,
    MODULE_IN_WRITABLE: _check_written_module,
    **dict.fromkeys(("import", SUBINTERPRETER, "cpython.PyInterpreterState_New"), _check_interpreter),
    **dict.fromkeys(("code.__new__", "marshal.loads", "marshal.load"), _check_code),
    # (`compile` alone makes nothing that runs: `exec`/`eval` of its code and `types.FunctionType` are checked)
    **dict.fromkeys(("function.__new__", "object.__setattr__", "exec"), _check_made_code),
    **dict.fromkeys(_NETWORK_EVENTS, _check_network),
    "socket.connect": _check_connect,
    "socket.bind": _check_bind,
}
