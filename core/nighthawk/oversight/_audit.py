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

A refusal raises `OperationRefusedError` (a `PermissionError`) naming the operation, its target and the
policy, and is added to the region's refusals for the caller to record once the evaluation is over:
nothing is emitted from inside the hook.

Python 3.11 raises no event when a thread starts: there the functions that start threads are wrapped, at
installation, to raise the event later versions raise (`_thread.start_new_thread`). Some operations raise
none in any version; their functions are wrapped the same way: making a FIFO or a device node
(`os.mkfifo`, `os.mknod`), raising a signal in-process (`signal.raise_signal`), and handing a function to
something that calls it later, outside the step, with no function of the model's in between to carry the
guard (`atexit.register`, `weakref.finalize`, `signal.signal`). The last three are announced only when
model-written code calls them itself: a library it uses may register its own clean-up
(`tempfile.TemporaryDirectory` does) without that being the model's choice of what runs later.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import types
from collections.abc import Callable
from contextvars import ContextVar
from types import FrameType
from typing import Any

from ..errors import OperationRefusedError
from ._kinds import GUARDS_NAME, NOT_ENFORCED, Enforcement, Refusal, RuntimeGuard
from ._paths import (
    CHANGED_PATHS,
    WRITE_FLAGS,
    Check,
    check_chdir,
    check_change,
    check_open,
    check_socket_file,
    check_sqlite,
    check_sqlite_handle,
    opens_for_writing,
    refusal,
    sqlite_connection_type,
)

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
        return
    with _install_lock:
        if _installed:
            return
        if sys.version_info < (3, 12):
            _announce_thread_starts()
        _announce_silent_operations()
        _enforced, _by_thread = enforced, by_thread
        _connect_for_model_code()
        sys.addaudithook(_hook_reading(enforced, by_thread))
        _installed = True


def _announce_thread_starts() -> None:
    """Make Python 3.11 raise the audit event 3.12 raises when a thread starts."""
    import _thread

    original = _thread.start_new_thread

    def start_new_thread(function: Callable[..., object], args: tuple[object, ...], *kwargs: object) -> int:
        sys.audit("_thread.start_new_thread", function, args, kwargs[0] if kwargs else None)
        return original(function, args, *kwargs)

    _thread.start_new_thread = _thread.start_new = start_new_thread  # type: ignore[assignment, attr-defined]
    threading._start_new_thread = start_new_thread  # type: ignore[attr-defined]


def _announce_silent_operations() -> None:
    """Wrap the functions whose operations Python does not announce so that they raise an event (see above)."""
    import atexit
    import posix
    import signal
    import weakref

    def announced(function: Callable[..., Any], event: str, target: Callable[..., tuple[object, ...]]) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            sys.audit(event, *target(*args, **kwargs))
            return function(*args, **kwargs)

        return _standing_in(function, call)

    def node(path: object, *_: object, dir_fd: object = None, **__: object) -> tuple[object, ...]:
        return path, dir_fd

    for name in ("mkfifo", "mknod"):
        if hasattr(posix, name):
            wrapped = announced(getattr(posix, name), f"os.{name}", node)
            setattr(posix, name, wrapped)
            setattr(os, name, wrapped)
    # Ending the process at once, with everything the kernel holds in memory: no event in any version.
    for name in ("_exit", "abort"):
        wrapped = announced(getattr(posix, name), f"os.{name}", lambda *args, **_: args)
        setattr(posix, name, wrapped)
        setattr(os, name, wrapped)
    _announce_crashes()
    posix.open = os.open = _standing_in(posix.open, _opening_at(posix.open))
    # Signals sent or scheduled without an event: raised here, sent through a process descriptor, or
    # delivered to this process later by a timer (SIGALRM, which ends it unless handled).
    signal.raise_signal = announced(signal.raise_signal, "signal.raise_signal", lambda *args: args)
    for name in ("pidfd_send_signal", "alarm", "setitimer"):
        if hasattr(signal, name):
            setattr(signal, name, announced(getattr(signal, name), f"signal.{name}", lambda *args, **_: args))
    try:
        import _posixsubprocess  # what `subprocess` and `multiprocessing` start children with, unannounced
    except ImportError:
        pass
    else:
        import subprocess

        _posixsubprocess.fork_exec = announced(  # type: ignore[attr-defined]
            _posixsubprocess.fork_exec, "_posixsubprocess.fork_exec", lambda *args, **_: args[:1]
        )
        if hasattr(subprocess, "_fork_exec"):  # `subprocess` keeps its own name for it (3.11 and later)
            subprocess._fork_exec = _posixsubprocess.fork_exec  # type: ignore[attr-defined]

    def left(function: Callable[..., Any], what: str, method: bool = False) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if _left_by_model_code((*args[method:], *kwargs.values())):
                sys.audit(_DEFERRED, what)
            return function(*args, **kwargs)

        return _standing_in(function, call)

    atexit.register = left(atexit.register, "atexit.register (a function run at exit)")
    signal.signal = left(signal.signal, "signal.signal (a function run at a signal)")
    # `weakref.finalize` keeps its identity (its class state, `isinstance`): only its `__init__` is wrapped.
    weakref.finalize.__init__ = left(  # type: ignore[method-assign]
        weakref.finalize.__init__, "weakref.finalize (a function run when an object is collected)", method=True
    )
    # Run at shutdown before `atexit`'s functions (`concurrent.futures` uses it): the same as `atexit.register`.
    threading._register_atexit = left(  # type: ignore[attr-defined]
        threading._register_atexit, "threading._register_atexit (a function run at exit)"  # type: ignore[attr-defined]
    )
    posix.register_at_fork = os.register_at_fork = left(
        posix.register_at_fork, "os.register_at_fork (a function run when the process forks)"
    )
    _announce_late_handlers()


def _announce_crashes() -> None:
    """`faulthandler`'s functions that crash the process on purpose (for its own tests), and its timer that
    can end it later (`dump_traceback_later(..., exit=True)`), raise an event."""
    import faulthandler

    def crash(function: Callable[..., Any], name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            sys.audit("nighthawk.process_end", f"faulthandler.{name}")
            return function(*args, **kwargs)

        return _standing_in(function, call)

    for name in dir(faulthandler):
        if name.startswith("_") and not name.startswith("__") and callable(getattr(faulthandler, name)):
            setattr(faulthandler, name, crash(getattr(faulthandler, name), name))
    later = faulthandler.dump_traceback_later

    def dump_traceback_later(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("exit", args[3] if len(args) > 3 else False):
            sys.audit("nighthawk.process_end", "faulthandler.dump_traceback_later(exit=True)")
        return later(*args, **kwargs)

    faulthandler.dump_traceback_later = _standing_in(later, dump_traceback_later)


def _opening_at(original: Callable[..., int]) -> Callable[..., int]:
    """`os.open` naming a path relative to an open directory (`dir_fd`) by `/proc/self/fd/N/path`, the name
    Linux resolves the same way: its `open` event carries no `dir_fd`, and the check would read the path as
    relative to the current directory. Only opens that may write are renamed (reading is never refused)."""

    def open_at(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if dir_fd is not None and isinstance(flags, int) and flags & WRITE_FLAGS and isinstance(dir_fd, int):
            name = os.fspath(path)
            if isinstance(name, str | bytes) and not os.path.isabs(name):
                folder = f"/proc/self/fd/{dir_fd}"
                path, dir_fd = os.path.join(os.fsencode(folder) if isinstance(name, bytes) else folder, name), None
        return original(path, flags, mode, dir_fd=dir_fd)

    return open_at


def _standing_in(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """`wrapper` named and documented as `original`, without the `__wrapped__` that `functools.wraps` leaves:
    `sqlite3.connect.__wrapped__` or `atexit.register.__wrapped__` would hand model code the plain function."""
    functools.update_wrapper(wrapper, original)
    del wrapper.__wrapped__
    return wrapper


def _announce_late_handlers() -> None:
    """Logging handlers that open their file (`delay=True`) or connect on the first record announce it when
    they are made: the record may come from the user's code, after the step, with no model code to hold."""
    import logging
    import logging.handlers

    def announcing(cls: type, target: Callable[..., tuple[str, tuple[object, ...]] | None]) -> None:
        original = cls.__init__  # type: ignore[misc]

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if (announced := target(*args, **kwargs)) is not None:
                event, arguments = announced
                sys.audit(event, *arguments)
            original(self, *args, **kwargs)

        cls.__init__ = _standing_in(original, __init__)  # type: ignore[misc]

    def file(filename: object, mode: str = "a", encoding: object = None, delay: bool = False, *_: object,
             **__: object) -> tuple[str, tuple[object, ...]] | None:
        return ("open", (os.path.abspath(os.fspath(filename)), mode, None)) if delay else None  # type: ignore[arg-type]

    def socket(host: object, port: object = None, *_: object, **__: object) -> tuple[str, tuple[object, ...]]:
        return "socket.connect", (None, host if port is None else (host, port))

    def web(host: object, *_: object, **__: object) -> tuple[str, tuple[object, ...]]:
        name, _, port = str(host[0] if isinstance(host, tuple) else host).rpartition(":")
        return "socket.connect", (None, (name, int(port)) if name and port.isdigit() else (str(host), None))

    announcing(logging.FileHandler, file)
    announcing(logging.handlers.SocketHandler, socket)  # DatagramHandler too
    announcing(logging.handlers.HTTPHandler, web)
    announcing(logging.handlers.SMTPHandler, web)


def _left_by_model_code(given: tuple[object, ...]) -> bool:
    """Whether a function to run later is left by model-written code: its caller is (its globals carry the
    guards), or guarded code runs here and the caller hands over functions that are not its own (a library's
    clean-up of its own objects is its business: `tempfile`, `random`)."""
    try:
        caller = sys._getframe(2).f_globals
    except ValueError:  # called from C with no Python caller (a thread's entry point)
        return False
    if GUARDS_NAME in caller:
        return True
    enforcement = _enforced.get() if _enforced is not None else None
    if enforcement is None:
        enforcement = _by_thread.get(threading.get_ident())
    if enforcement is None or enforcement.mode not in ("evaluation", "handling") or not enforcement.guards:
        return False
    module = caller.get("__name__")
    return not all(_own(function, module) for function in given if callable(function))


def _own(function: object, module: object) -> bool:
    """Whether `function` is `module`'s own, or a method of an object (a lock's `_at_fork_reinit`)."""
    if isinstance(function, types.BuiltinMethodType) and not isinstance(function.__self__, types.ModuleType | None):
        return True
    return getattr(getattr(function, "__func__", function), "__module__", None) == module


_DEFERRED = "nighthawk.deferred_call"
"""The event the wrappers above raise when model-written code leaves a function to run later."""


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
    try:
        frame: FrameType | None = sys._getframe(2)  # (`frame.f_code` and `id` would raise audit events in turn)
    except ValueError:
        return ()  # raised from C with no Python caller
    while frame is not None:
        guards = frame.f_globals.get(GUARDS_NAME)
        if guards is not None:
            return guards  # type: ignore[no-any-return]
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
        if GUARDS_NAME in namespace:
            return False
        if _nighthawks(namespace):
            return False  # Nighthawk's own frame, reached with no function of the user's in between
        if not _library(namespace):
            return True
        frame = frame.f_back
    return False


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

    sqlite3.connect = sqlite3.dbapi2.connect = _standing_in(original, connect)  # type: ignore[assignment]


def _file_guard_here() -> bool:
    enforcement = _enforced.get() if _enforced is not None else None
    if enforcement is None:
        enforcement = _by_thread.get(threading.get_ident())
    return enforcement is not None and any(guard.files for guard in enforcement.guards)


# --- processes, threads, signals ------------------------------------------------------------------------


def _check_process(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    target = f" ({_brief(args[0])})" if args else ""
    return refusal(guards[0], f"{event}{target}", "model-written code may not start processes under this policy "
                    "(a child process would run outside it)")


def _check_thread(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    return refusal(guards[0], f"starting a thread ({event})", "model-written code may not start threads under "
                    "this policy (a thread would run without it); call the function directly")


def _check_signal(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    return refusal(guards[0], f"{event}{tuple(args)!r}", "model-written code may not send signals under this policy")


def _check_end(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    # A limit lowered on the process (CPU time, memory, open files) ends or breaks the kernel later.
    what = str(args[0]) if event == "nighthawk.process_end" else f"{event}{tuple(args)!r}"
    return refusal(guards[0], what, "model-written code may not end the process under this policy (the notebook "
                   "would lose everything it holds in memory)")


def _check_made_code(guards: tuple[RuntimeGuard, ...], event: str, args: tuple[object, ...]) -> Refusal | None:
    if event == "object.__setattr__":
        if len(args) < 2 or args[1] != "__code__":
            return None
        what = "replacing the code of a function"
    else:
        try:
            caller = sys._getframe(2).f_globals  # the caller of `compile`, `exec` or `types.FunctionType`
        except ValueError:
            return None
        if GUARDS_NAME not in caller:
            return None  # a library (`dataclasses`, `namedtuple`) making its own functions, or Nighthawk's eval
        what = {"compile": "compiling new code", "exec": "running compiled code"}.get(event, "making a function")
    return refusal(guards[0], f"{what} ({event})", "model-written code may not make functions from new code under "
                   "this policy (they would run later without it); write the expression itself")


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
    "os.startfile", "pty.spawn", "_posixsubprocess.fork_exec",
)
_LOOKUP_EVENTS = ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo")
_NETWORK_EVENTS = ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", *_LOOKUP_EVENTS)

_CHECKS: dict[str, Check] = {
    "open": check_open,
    "os.chdir": check_chdir,
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
    **dict.fromkeys(("os._exit", "os.abort", "nighthawk.process_end", "resource.setrlimit", "resource.prlimit"),
                    _check_end),
    _DEFERRED: _check_deferred,
    **dict.fromkeys(("function.__new__", "object.__setattr__", "compile", "exec"), _check_made_code),
    **dict.fromkeys(_NETWORK_EVENTS, _check_network),
    "socket.connect": _check_connect,
    "socket.bind": _check_bind,
}
