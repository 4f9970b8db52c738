"""Operations Python does not announce with an audit event, made to announce one: the wrappers the audit
hook of `_audit.py` is installed with (once per process, at the first guarded evaluation).

Python 3.11 raises no event when a thread starts: there the functions that start threads raise the event
later versions raise (`_thread.start_new_thread`); in every version they carry the guards into the thread,
but for a `ThreadPoolExecutor`'s work, which carries those of the code that handed it over.
What guarded code leaves to `asyncio` in a fresh context, and the clean-up of a temporary file it makes,
carry them too. Other interpreters (`_interpreters`) announce that they are made or run code. Some operations raise none in any version: making a FIFO
or a device node (`os.mkfifo`, `os.mknod`), raising a signal in-process, ending the process (`os._exit`,
`os.abort`, `faulthandler`'s crashes), a writing `os.open` relative to a `dir_fd` (its `open` event names
no directory), a logging handler that opens its file or connects only at its first record, and handing a
function to something that calls it later, outside the step, with no function of the model's in between to
carry the guard (`atexit.register`, `weakref.finalize`, `signal.signal`, `os.register_at_fork`,
`threading._register_atexit`). These last are announced when model-written code calls them, or when guarded
code runs and the caller hands over a function not its own (an `ExitStack` callback calling
`atexit.register`): a library may register clean-up of its own (`tempfile.TemporaryDirectory` does)
without that being the model's choice of what runs later.
"""

from __future__ import annotations

import functools
import operator
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from ._kinds import GUARDS_NAME, Enforcement
from ._paths import WRITE_FLAGS

__all__ = [
    "DEFERRED",
    "INTERPRETER_MODULES",
    "POOL_WORK",
    "PROCESS_END",
    "SUBINTERPRETER",
    "announce_loaded",
    "announce_silent_operations",
    "guarding_here",
    "standing_in",
]

DEFERRED = "nighthawk.deferred_call"
"""The event raised when model-written code leaves a function to run later."""
PROCESS_END = "nighthawk.process_end"
"""The event raised before a function that ends the process at once (its name the argument)."""
POOL_WORK = "nighthawk.pool_work"
"""The event raised when guarded code hands work to a pool of worker processes that is already running."""
SUBINTERPRETER = "nighthawk.subinterpreter"
"""The event raised when a second interpreter is made or runs code (the function its argument)."""
INTERPRETER_MODULES = frozenset({"_xxsubinterpreters", "_interpreters"})
"""The modules that make and run other interpreters (3.11, 3.13): one has none of this one's audit hooks."""
_INTERPRETER_FUNCTIONS = ("create", "exec", "run_string", "run_func", "call", "call_shared")

_enforcement_here: Callable[[], Enforcement | None] = lambda: None  # noqa: E731 - set by `announce_silent_operations`
_by_thread: dict[int, Enforcement] = {}
_enforced: ContextVar[Enforcement | None] | None = None


def announce_silent_operations(
    enforcement_here: Callable[[], Enforcement | None],
    by_thread: dict[int, Enforcement],
    enforced: ContextVar[Enforcement | None],
) -> None:
    """Wrap the functions whose operations Python does not announce (see above); `enforcement_here` tells
    what is enforced on the calling thread or task, `by_thread` holds what a thread carries, and `enforced`
    is the context variable the guards of a task are in."""
    global _enforcement_here, _by_thread, _enforced
    _enforcement_here, _by_thread, _enforced = enforcement_here, by_thread, enforced
    _carry_into_threads()
    _hold_thread_pool_work()
    _announce_silent()


def guarding_here() -> bool:
    """Whether guarded code runs here (not a step's own work): a thread started here, a loop callback given
    a fresh context or a temporary file made here is held to its guards."""
    enforcement = _enforcement_here()
    return enforcement is not None and enforcement.mode in ("evaluation", "handling") and bool(enforcement.guards)


_POOLS = {
    # module: (class, the methods that hand it work)
    "multiprocessing.pool": ("Pool", ("apply_async", "_map_async", "imap", "imap_unordered")),
    "concurrent.futures.process": ("ProcessPoolExecutor", ("submit",)),
}
_announced: set[str] = set()
_modules_seen = 0


def announce_loaded() -> None:
    """Make handing work to a pool of worker processes raise `POOL_WORK` when guarded code does it: the work
    is pickled to a process already running, through a pipe no event names, and runs there unguarded. Make
    the functions that make or run another interpreter raise `SUBINTERPRETER`: Python 3.13 announces no new
    interpreter, and one made before (by the user) runs code with none of this interpreter's hooks.

    Called before every guarded evaluation: what the user loaded before it is loaded by then (importing an
    interpreter module while guarded code runs is refused by the hook).
    """
    global _modules_seen
    if len(_announced) == len(_POOLS) + len(INTERPRETER_MODULES) + 2 or len(sys.modules) == _modules_seen:
        return  # (nothing imported since the last look: the common case, a dict's length)
    _modules_seen = len(sys.modules)
    if "asyncio.events" not in _announced and (events := sys.modules.get("asyncio.events")) is not None:
        events.Handle.__init__ = _holding_callbacks(events.Handle.__init__)  # type: ignore[method-assign]
        _announced.add("asyncio.events")
    if "tempfile" not in _announced and (tempfile := sys.modules.get("tempfile")) is not None:
        _hold_temporary_clean_ups(tempfile)
        _announced.add("tempfile")
    for name, (class_name, methods) in _POOLS.items():
        module = sys.modules.get(name)
        if name in _announced or module is None:
            continue
        pool = getattr(module, class_name)
        for method in methods:
            setattr(pool, method, _handing(getattr(pool, method), f"{class_name}.{method}"))
        _announced.add(name)
    for name in INTERPRETER_MODULES - _announced:
        if (module := sys.modules.get(name)) is not None:
            for function in _INTERPRETER_FUNCTIONS:
                if hasattr(module, function):
                    running = announced(getattr(module, function), SUBINTERPRETER, _naming(f"{name}.{function}"))
                    setattr(module, function, running)
            _announced.add(name)


def _holding_callbacks(original: Callable[..., None]) -> Callable[..., None]:
    """`asyncio`'s `Handle.__init__`, which puts the guards in force into the context a callback is given
    to run in (`loop.call_soon(f, context=contextvars.Context())`, a task made with `context=`): there the
    context variable would be empty, and the callback or the task would run unheld. A task's wake-up is
    left alone (its context is the waiting task's own, held from its start if guarded code made it)."""

    def __init__(self: Any, callback: Any, args: Any, loop: Any, context: Any = None) -> None:
        if context is not None and _enforced is not None and guarding_here() and context.get(_enforced) is None:
            if not (isinstance(callback, types.BuiltinMethodType) and callback.__name__ == "task_wakeup"):
                try:
                    context.run(_enforced.set, _enforcement_here())
                except RuntimeError:
                    pass  # a context entered now: the one running, whose guards are these
        original(self, callback, args, loop, context)

    return standing_in(original, __init__)


def _naming(what: str) -> Callable[..., tuple[object, ...]]:
    return lambda *_, **__: (what,)


def announced(function: Callable[..., Any], event: str, target: Callable[..., tuple[object, ...]]) -> Any:
    """`function`, raising `event` with the arguments `target` makes of its call's before it runs."""

    def call(*args: Any, **kwargs: Any) -> Any:
        sys.audit(event, *target(*args, **kwargs))
        return function(*args, **kwargs)

    return standing_in(function, call)


def _handing(method: Callable[..., Any], what: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        enforcement = _enforcement_here()
        if enforcement is not None and enforcement.mode in ("evaluation", "handling") and enforcement.guards:
            sys.audit(POOL_WORK, what)
        elif GUARDS_NAME in sys._getframe(1).f_globals:  # a function the model made, run later
            sys.audit(POOL_WORK, what)
        return method(*args, **kwargs)

    return standing_in(method, call)


def _carry_into_threads() -> None:
    """A thread started while guarded code runs (by the model's code, or by a library it calls for its own
    work, such as `tqdm`'s monitor) runs under the same guards, for its whole life: what it does is held as
    the model's code is (but for the work a thread pool's worker is handed, see `_hold_thread_pool_work`).
    Python 3.11 also raises here the audit event 3.12 raises when a thread starts."""
    import _thread

    def starting(original: Callable[..., int]) -> Callable[..., int]:
        def start(function: Callable[..., object], *args: Any, **kwargs: Any) -> int:
            if sys.version_info < (3, 12):
                sys.audit("_thread.start_new_thread", function, *args[:1], args[1] if len(args) > 1 else None)
            enforcement = _enforcement_here()
            if enforcement is not None and guarding_here():
                function = functools.partial(_held, enforcement, function)
            return original(function, *args, **kwargs)

        return standing_in(original, start)

    # (`threading` keeps its own names for them: `_start_new_thread` on 3.11, `_start_joinable_thread` on 3.13)
    for name, alias in (("start_new_thread", "_start_new_thread"), ("start_joinable_thread", "_start_joinable_thread")):
        if hasattr(_thread, name):
            wrapped = starting(getattr(_thread, name))
            setattr(_thread, name, wrapped)
            if name == "start_new_thread":
                _thread.start_new = wrapped  # type: ignore[attr-defined]
            if hasattr(threading, alias):
                setattr(threading, alias, wrapped)


def _held(enforcement: Enforcement | None, function: Callable[..., object], *args: Any, **kwargs: Any) -> object:
    """`function` called under `enforcement` on this thread (where no context holds guards of its own);
    `None`: under none, whatever the thread carries (a model-made function is still held where it runs)."""
    thread = threading.get_ident()
    outer = _by_thread.get(thread)
    if enforcement is None:
        _by_thread.pop(thread, None)
    else:
        _by_thread[thread] = enforcement
    try:
        return function(*args, **kwargs)
    finally:
        if outer is None:
            _by_thread.pop(thread, None)
        else:
            _by_thread[thread] = outer


_work_holds: weakref.WeakKeyDictionary[object, Enforcement | None] = weakref.WeakKeyDictionary()
"""Each piece of work handed to a `ThreadPoolExecutor` (its `_WorkItem`), with the guards of the code that
handed it over (`None`: the user's own work, held to nothing)."""


def _hold_thread_pool_work() -> None:
    """A `ThreadPoolExecutor`'s worker runs every piece of work under the guards of the code that handed it
    over, not under those the worker thread carries: a worker started while guarded code ran (the user's
    pool, asyncio's default executor, a library's pool, started lazily during the step) would otherwise
    hold the user's own work handed to it after the step. Work the model's code hands over (`submit`,
    `loop.run_in_executor`) is held, by whatever worker runs it, even Python's own functions
    (`POOL.submit(os.remove, p)`); work put on a pool's queue some other way, and the pool's `initializer`,
    run under what the worker carries."""
    from concurrent.futures import thread as pool  # loaded by `asyncio` anyway; cheap, and needed before any work

    item = pool._WorkItem  # type: ignore[attr-defined]
    made, run = item.__init__, item.run

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        _work_holds[self] = _handing_over()

    def running(self: Any) -> None:
        if self not in _work_holds:  # made before the first guarded evaluation (or not by `__init__`)
            return run(self)
        return _held(_work_holds.pop(self), run, self)  # type: ignore[return-value]

    item.__init__, item.run = standing_in(made, __init__), standing_in(run, running)


def _handing_over() -> Enforcement | None:
    """The guards of the code handing work over here: those enforced (guarded code runs here), or those of
    a model-made function on the stack (one the user calls after the step), or none."""
    enforcement = _enforcement_here()
    if enforcement is not None and guarding_here():
        return enforcement
    frame: types.FrameType | None = sys._getframe(1).f_back  # (the caller of `__init__`, if any)
    while frame is not None:
        if (guards := frame.f_globals.get(GUARDS_NAME)) is not None:
            return Enforcement(guards)  # outside any step: nowhere to record a refusal
        frame = frame.f_back
    return None


_made_guarded: weakref.WeakKeyDictionary[object, Enforcement] = weakref.WeakKeyDictionary()
"""Temporary files and folders made while guarded code ran, with its guards: their clean-up stays held."""


def _hold_temporary_clean_ups(tempfile: types.ModuleType) -> None:
    """A temporary file or folder that guarded code makes is deleted later by `tempfile` (when it is closed,
    collected, or at exit), by the name the object holds: a name the model's code can change (the closer's
    `name`, the finalizer's arguments) after making it in a writable folder. Its clean-up is held to the
    guards it was made under, wherever it runs."""

    def recording(original: Callable[..., None]) -> Callable[..., None]:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            enforcement = _enforcement_here()
            if enforcement is not None and guarding_here():
                _made_guarded[self] = enforcement
                finalizer = getattr(self, "_finalizer", None)  # `TemporaryDirectory`'s, made in `__init__`
                if isinstance(finalizer, weakref.finalize) and (found := finalizer.detach()) is not None:
                    _, function, arguments, keywords = found
                    held = functools.partial(_held, enforcement, function)
                    self._finalizer = weakref.finalize(self, held, *arguments, **(keywords or {}))

        return standing_in(original, __init__)

    def holding(original: Callable[..., Any]) -> Callable[..., Any]:
        def clean_up(self: Any, *args: Any, **kwargs: Any) -> Any:
            enforcement = _made_guarded.get(self)
            return original(self, *args, **kwargs) if enforcement is None else _held(enforcement, original, self, *args, **kwargs)

        return standing_in(original, clean_up)

    for cls in (tempfile._TemporaryFileCloser, tempfile.TemporaryDirectory):  # type: ignore[attr-defined]
        cls.__init__ = recording(cls.__init__)
        for name in ("close", "cleanup", "__del__", "__exit__"):
            if name in vars(cls):
                setattr(cls, name, holding(getattr(cls, name)))


def _announce_silent() -> None:
    """Wrap the functions whose operations Python does not announce so that they raise an event (see above)."""
    import _signal
    import atexit
    import posix
    import signal

    for name in ("mkfifo", "mknod"):
        if hasattr(posix, name):
            wrapped = _making_node(getattr(posix, name), f"os.{name}")
            setattr(posix, name, wrapped)
            setattr(os, name, wrapped)
    # Ending the process at once, with everything the kernel holds in memory: no event in any version.
    for name in ("_exit", "abort"):
        wrapped = announced(getattr(posix, name), f"os.{name}", lambda *args, **_: args)
        setattr(posix, name, wrapped)
        setattr(os, name, wrapped)
    _announce_crashes()
    posix.open = os.open = standing_in(posix.open, _opening_at(posix.open))
    # Signals sent or scheduled without an event: raised here, sent through a process descriptor, or
    # delivered to this process later by a timer (SIGALRM, which ends it unless handled). `signal` takes
    # them from `_signal`, where model code can reach them too: both names are replaced.
    for name in ("raise_signal", "pidfd_send_signal", "alarm", "setitimer"):
        if hasattr(_signal, name):
            wrapped = announced(getattr(_signal, name), f"signal.{name}", lambda *args, **_: args)
            setattr(_signal, name, wrapped)
            setattr(signal, name, wrapped)
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
                sys.audit(DEFERRED, what)
            return function(*args, **kwargs)

        return standing_in(function, call)

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
            sys.audit(PROCESS_END, f"faulthandler.{name}")
            return function(*args, **kwargs)

        return standing_in(function, call)

    for name in dir(faulthandler):
        if name.startswith("_") and not name.startswith("__") and callable(getattr(faulthandler, name)):
            setattr(faulthandler, name, crash(getattr(faulthandler, name), name))
    later = faulthandler.dump_traceback_later

    def dump_traceback_later(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("exit", args[3] if len(args) > 3 else False):
            sys.audit(PROCESS_END, "faulthandler.dump_traceback_later(exit=True)")
        return later(*args, **kwargs)

    faulthandler.dump_traceback_later = standing_in(later, dump_traceback_later)


def _making_node(original: Callable[..., None], event: str) -> Callable[..., None]:
    """`os.mkfifo` or `os.mknod`, raising `event` with the path and `dir_fd` it is given, each read once as
    the system call reads them (a number-like `dir_fd` by its `__index__`), and handed on as read."""

    def make(path: Any, *args: Any, dir_fd: Any = None, **kwargs: Any) -> None:
        path, dir_fd = _once(path), None if dir_fd is None else operator.index(dir_fd)
        sys.audit(event, path, dir_fd)
        return original(path, *args, dir_fd=dir_fd, **kwargs)

    return make


def _once(path: Any) -> Any:
    """The name a path object gives (`__fspath__`), asked once (a second answer need not be the same), as a
    plain `str` or `bytes` (a subclass's own methods could answer `isabs` otherwise than its characters)."""
    if isinstance(path, int):
        return path
    name = path if isinstance(path, str | bytes) else os.fspath(path)
    return "".join((name,)) if isinstance(name, str) else b"".join((name,))


def _opening_at(original: Callable[..., int]) -> Callable[..., int]:
    """`os.open` naming a path relative to an open directory (`dir_fd`) by `/proc/self/fd/N/path`, the name
    Linux resolves the same way: its `open` event carries no `dir_fd`, and the check would read the path as
    relative to the current directory. Only opens that may write are renamed (reading is never refused).
    The flags and `dir_fd` are read as the system call reads them (`np.int64`, any `__index__`), once."""

    def open_at(path: Any, flags: Any, mode: Any = 0o777, *, dir_fd: Any = None) -> int:
        if dir_fd is not None:
            path, flags, dir_fd = _once(path), operator.index(flags), operator.index(dir_fd)
            if flags & WRITE_FLAGS and isinstance(path, str | bytes) and not os.path.isabs(path):
                folder = f"/proc/self/fd/{dir_fd}"
                path, dir_fd = os.path.join(os.fsencode(folder) if isinstance(path, bytes) else folder, path), None
        return original(path, flags, mode, dir_fd=dir_fd)

    return open_at


def standing_in(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
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

        cls.__init__ = standing_in(original, __init__)  # type: ignore[misc]

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
    enforcement = _enforcement_here()
    if enforcement is None or enforcement.mode not in ("evaluation", "handling") or not enforcement.guards:
        return False
    module = caller.get("__name__")
    return not all(_own(function, module) for function in given if callable(function))


def _own(function: object, module: object) -> bool:
    """Whether `function` is `module`'s own or its package's (`asyncio.runners` handing a `partial` of its
    own method, `loky` a method of a base class in another of its modules), a method of an object (a lock's
    `_at_fork_reinit`), or Python's default SIGINT handler put back."""
    import signal

    if function is signal.default_int_handler:
        return True
    if isinstance(function, functools.partial):
        function = function.func
    if isinstance(function, types.BuiltinMethodType) and not isinstance(function.__self__, types.ModuleType | None):
        return True
    home = getattr(getattr(function, "__func__", function), "__module__", None)
    return isinstance(home, str) and isinstance(module, str) and home.partition(".")[0] == module.partition(".")[0]
