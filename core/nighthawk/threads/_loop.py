"""Run a step from synchronous code: the conversation on one background loop, user code on the caller's thread.

A Jupyter cell already runs inside the kernel's event loop, so a sync natural function can use neither
`asyncio.run` nor a fresh loop per call: provider HTTP clients pool connections per loop, and a closed loop
breaks the next request. So the model conversation of every sync step runs on one long-lived loop in one
daemon thread.

The user's Python must not run there, though: thread-bound objects (a sqlite connection made in a cell, GUI
state, thread-locals) only work on the thread that made them, and only the main thread receives an
interrupt. So the calling thread does not merely wait for the step: it *serves* it. Whenever the step needs
user code run (an expression, a sync tool, a return value, a validator, a sync scripted model), it posts a
callable to the caller's queue with `on_user_thread` and awaits the answer; the caller runs it and goes back
to waiting. Serving is re-entrant, so a tool that calls another sync natural function (or fans out to worker
threads, each of which serves its own steps) needs no extra loop or thread.

An interrupt lands on the caller thread, whether it was running user code or waiting: the step's task is
cancelled and awaited before the interrupt is re-raised, so nothing the step would have done can still
happen, and nothing is committed (commits happen on the caller, after a result). A step's wall-time
deadline stops its user code the same way (see `_deadline`).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import inspect
import queue
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from ..errors import NighthawkError, StepAbortedError, not_committed
from ._deadline import DeadlineInterrupt, call_within_deadline
from ._interrupts import Interrupts, taking_interrupts, user_code_depth

__all__ = [
    "UserThreadExecutor",
    "await_user",
    "call_user",
    "awaited",
    "calling_thread_name",
    "on_import_thread",
    "on_user_thread",
    "run_as_user",
    "run_sync",
    "user_thread_id",
    "user_thread_executor",
]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_importer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nighthawk-import")
"""One thread for the imports of seconds a first step makes; one worker, so they run one after the other."""

# Exceptions that must never escape user code into the loop: asyncio re-raises the first two out of
# `run_forever` (killing the loop thread), and the last two would read as "this task was cancelled".
_ESCAPES = (SystemExit, KeyboardInterrupt, GeneratorExit, asyncio.CancelledError)


def _background_loop() -> asyncio.AbstractEventLoop:
    """The one loop every sync step's conversation runs on (started on first use, restarted if it died)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                while True:
                    try:
                        loop.run_forever()
                        return  # stopped on purpose (never, today)
                    except BaseException:  # noqa: BLE001 - a stray task's SystemExit must not end the thread
                        continue

            _thread = threading.Thread(target=serve, name="nighthawk-loop", daemon=True)
            _loop = loop
            _thread.start()
        return _loop


def call_first_threadsafe(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    """`loop.call_soon_threadsafe(callback)`, except that `callback` runs before what the loop has queued already.

    An interrupt's cancel must not wait behind the queued steps of a thousand items (a 2,000-item map at
    concurrency 1,000 had about a thousand queued: 0.1-1.5 s). asyncio has no priorities, so the handle goes
    to the front of the loop's ready queue (the deque `_ready` of asyncio's own loops, which the loop pops from
    the left; a deque's `appendleft` is atomic), and the loop is woken as `call_soon_threadsafe` wakes it. A
    loop of another kind gets it at the back.
    """
    ready = getattr(loop, "_ready", None)
    wake = getattr(loop, "_write_to_self", None)
    if not isinstance(ready, collections.deque) or wake is None or loop.is_closed():
        loop.call_soon_threadsafe(callback)
        return
    ready.appendleft(asyncio.Handle(callback, (), loop))
    wake()


# --- the caller side ------------------------------------------------------------------------------------


class _Done:
    """Queue marker: the step's task has finished."""


_DONE = _Done()


def _woken() -> None:
    """Queued by an interrupt's handler to wake the waiting thread (which then raises the interrupt)."""


class _Caller:
    """A thread waiting for one step and serving the user code that step needs run."""

    def __init__(self) -> None:
        self.thread_id = threading.get_ident()
        self.thread_name = threading.current_thread().name
        self.requests: queue.SimpleQueue[Callable[[], None] | _Done] = queue.SimpleQueue()
        self._closed = False
        self._guard = threading.Lock()

    def post(self, request: Callable[[], None]) -> bool:
        """Queue `request` for the caller; `False` when the caller no longer serves this step."""
        with self._guard:
            if self._closed:
                return False
            self.requests.put(request)
            return True

    def close(self) -> list[Callable[[], None]]:
        """Stop accepting requests; return the ones still queued (their waiters must be released)."""
        with self._guard:
            self._closed = True
        left: list[Callable[[], None]] = []
        while True:
            try:
                item = self.requests.get_nowait()
            except queue.Empty:
                return left
            if not isinstance(item, _Done):
                left.append(item)


_caller: contextvars.ContextVar[_Caller | None] = contextvars.ContextVar("nighthawk_caller", default=None)
_refusing: contextvars.ContextVar[list[tuple[asyncio.AbstractEventLoop, Callable[[], None]]] | None] = contextvars.ContextVar(
    "nighthawk_refusing", default=None
)
"""While requests are refused: where each refused request leaves the call that tells its step so, on its loop."""


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on the background loop in the caller's context, serving its user code until it ends.

    On KeyboardInterrupt (an interrupted kernel), or any other exception raised on this thread while it waits
    (a `SystemExit` from a signal handler), the task is cancelled and awaited before the exception is
    re-raised; a second one while it ends stops waiting (the task can no longer run user code here). On the
    main thread, Ctrl-C is taken while it waits and raised here (`_interrupts`), never lost in a `__del__`.

    Raises:
        NighthawkError: Called from a coroutine running on the background loop itself (it would wait for
            itself); make that natural function async and await it.
    """
    loop = _background_loop()
    if threading.current_thread() is _thread:
        coroutine.close()
        raise NighthawkError(
            "a sync natural function was called from a coroutine running on nighthawk's background loop, "
            "which would wait for itself; make the function `async def` and `await` it"
        )
    caller = _Caller()
    context = contextvars.copy_context()
    context.run(_caller.set, caller)
    result: concurrent.futures.Future[T] = concurrent.futures.Future()
    task_box: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coroutine, context=context)
        task_box.append(task)

        def finished(done: asyncio.Task[T]) -> None:
            if done.cancelled():
                result.cancel()
            elif (error := done.exception()) is not None:
                result.set_exception(error)
            else:
                result.set_result(done.result())
            caller.requests.put(_DONE)

        task.add_done_callback(finished)

    try:
        # Inside the `try`: an interrupt that lands while the start is being scheduled must cancel the step
        # too, or it would run on, unserved and uncancelled, after the caller has gone.
        loop.call_soon_threadsafe(start)
        with taking_interrupts(lambda: caller.requests.put(_woken)) as interrupts:
            _serve(caller, interrupts)
    except BaseException:
        # An interrupt, a `SystemExit` a signal handler raised, or any error out of the serving itself: the
        # step must not go on without its caller (a coding agent would keep running with a live token).
        _cancel_and_wait(loop, coroutine, task_box, caller, result)
        raise
    finally:
        _refuse_all(caller.close())
    return result.result()


def calling_thread_name() -> str:
    """The name of the user's thread the current step serves: the caller of `run_sync` when the step runs on
    the background loop, else the current thread."""
    caller = _caller.get()
    return caller.thread_name if caller is not None else threading.current_thread().name


def _serve(caller: _Caller, interrupts: Interrupts) -> None:
    """Run the step's requests on this thread until the step has finished, or raise an interrupt taken."""
    while True:
        item = caller.requests.get()
        interrupts.check()
        if isinstance(item, _Done):
            return
        with interrupts.running():
            item()


def _cancel_and_wait(
    loop: asyncio.AbstractEventLoop,
    coroutine: Coroutine[Any, Any, Any],
    task_box: list[asyncio.Task[Any]],
    caller: _Caller,
    result: concurrent.futures.Future[Any],
) -> None:
    """Cancel the step's task and wait until it has ended, refusing the user code it still asks for.

    Two moments of the interrupt need care. Landing before `start` was queued, the task is never made: the
    cancel (queued after it, and the loop runs its callbacks in order) then closes the coroutine and ends the
    wait itself. Landing just after `_serve` took `_DONE` (the step had just ended), no second `_DONE` will
    come: the wait would last until a second interrupt. `finished` settles `result` before it posts `_DONE`,
    so a settled `result` means the step is over, and an unsettled one that `_DONE` is still to come.
    """

    def cancel() -> None:
        if task_box:
            task_box[0].cancel()
            return
        coroutine.close()
        result.cancel()
        caller.requests.put(_DONE)

    loop.call_soon_threadsafe(cancel)
    try:
        while not result.done():
            item = caller.requests.get()
            if isinstance(item, _Done):
                return
            _refuse(item)  # the step is ending: run no more user code for it
    except BaseException:  # noqa: BLE001 - the first exception is the one re-raised
        # A second interrupt (or exit): stop waiting. The cancelled task can no longer reach this thread (the
        # caller is closed by `run_sync`), and its result is never committed.
        return


def _refuse(request: Callable[[], None]) -> None:
    _refuse_all([request])


def _refuse_all(requests: list[Callable[[], None]]) -> None:
    """Run none of `requests`' user code: each tells its step it was cancelled, all of them in one call per loop.

    One hand-over for thousands of requests, not one each: every hand-over to a busy loop thread can wait for
    the interpreter's switch interval (5 ms), which made refusing a 2,000-item map's requests take seconds.
    """
    told: list[tuple[asyncio.AbstractEventLoop, Callable[[], None]]] = []
    token = _refusing.set(told)
    try:
        for request in requests:
            request()
    finally:
        _refusing.reset(token)
        by_loop: dict[asyncio.AbstractEventLoop, list[Callable[[], None]]] = {}
        for loop, tell in told:
            by_loop.setdefault(loop, []).append(tell)
        for loop, tells in by_loop.items():
            loop.call_soon_threadsafe(_call_each, tells)


def _call_each(calls: list[Callable[[], None]]) -> None:
    for call in calls:
        call()


# --- the step side --------------------------------------------------------------------------------------


def running_user_code() -> bool:
    """Whether the current code was called by a step evaluating user code (an expression, a tool).

    Hosts use it to turn their own ways out (IPython's `exit()` asks the kernel to shut down instead of
    raising `SystemExit`) into an exception the step can end on.
    """
    return user_code_depth.get() > 0


def _guarded(fn: Callable[[], T]) -> T:
    """Call user code, stopped at the step's deadline; turn the exceptions that would wreck a loop or a task
    into a step-ending error."""
    token = user_code_depth.set(user_code_depth.get() + 1)
    try:
        return call_within_deadline(fn)
    except _ESCAPES as exc:
        if isinstance(exc, KeyboardInterrupt) and (
            threading.current_thread() is threading.main_thread() or isinstance(exc, DeadlineInterrupt)
        ):
            raise  # a real interrupt, or an enclosing step's deadline: the caller cancels the step
        raise _aborted(exc) from exc
    finally:
        user_code_depth.reset(token)


def _aborted(exc: BaseException) -> StepAbortedError:
    detail = f"{type(exc).__name__}({exc})" if str(exc) else type(exc).__name__
    return StepAbortedError(
        f"user code run by the step raised {detail}: the step was stopped and {not_committed()}. Code a "
        "step evaluates cannot exit the interpreter or cancel the step; raise an ordinary exception instead"
    )


async def on_user_thread(fn: Callable[[], T]) -> T:
    """Run the synchronous user code `fn` on the thread that started the step, and return its result.

    Inline when the step runs on its caller's own loop (async natural functions) or already on the caller's
    thread. `SystemExit`, `GeneratorExit`, `CancelledError` (and `KeyboardInterrupt` off the main thread)
    raised by `fn` end the step with `StepAbortedError`; a real interrupt cancels the step.
    """
    caller = _caller.get()
    if caller is None or caller.thread_id == threading.get_ident():
        return _guarded(fn)
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: object, error: BaseException | None) -> None:
        if answer.done():
            return  # the step was cancelled meanwhile
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(value)  # type: ignore[arg-type]

    def request() -> None:
        refused = _refusing.get()
        if refused is not None:
            refused.append((loop, lambda: settle(None, asyncio.CancelledError())))
            return
        try:
            value = context.run(_as_user, fn)
        except KeyboardInterrupt:
            loop.call_soon_threadsafe(settle, None, asyncio.CancelledError())
            raise  # propagates out of `_serve`: the caller cancels the step
        except BaseException as exc:  # noqa: BLE001 - handed to the step, which decides
            loop.call_soon_threadsafe(settle, None, exc)
            return
        loop.call_soon_threadsafe(settle, value, None)

    if not caller.post(request):
        raise NighthawkError("the block that started this step is no longer running; its user code cannot run")
    return await answer


def user_thread_id() -> int:
    """On a step's loop: the thread `on_user_thread` runs the step's user code on (this one, when inline)."""
    caller = _caller.get()
    return threading.get_ident() if caller is None else caller.thread_id


def run_as_user(context: contextvars.Context, fn: Callable[[], T]) -> T:
    """Run `fn` in `context` (copied on a step's loop) as `on_user_thread` runs user code there: on behalf of
    that step, whichever step's request this thread is serving."""
    return context.run(_as_user, fn)


def _as_user(fn: Callable[[], T]) -> T:
    # User code may start its own loop here (`asyncio.run` of an async natural function): that loop's steps
    # must run inline, not post to this thread, which is busy running them.
    _caller.set(None)
    return _guarded(fn)


async def await_user(awaitable: Awaitable[T]) -> T:
    """Await an awaitable made by user code; escapes that would wreck the loop end the step instead."""
    token = user_code_depth.set(user_code_depth.get() + 1)
    try:
        return await awaitable
    except _ESCAPES as exc:
        if isinstance(exc, asyncio.CancelledError) and _current_task_cancelling():
            raise  # the step itself is being cancelled (an interrupt): let it end
        raise _aborted(exc) from exc
    finally:
        user_code_depth.reset(token)


def _current_task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def call_user(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Call a user function (a tool): a sync one on the caller's thread, an async one on this loop."""
    if inspect.iscoroutinefunction(function):
        return await await_user(function(*args, **kwargs))
    value = await on_user_thread(lambda: function(*args, **kwargs))
    if inspect.isawaitable(value):
        value = await await_user(value)
    return value


class UserThreadExecutor(concurrent.futures.Executor):
    """A `concurrent.futures.Executor` that runs submitted calls on the step's caller thread.

    Handed to pydantic-ai (`Agent.using_thread_executor`) so that the sync callables it would send to a worker
    thread (a sync `FunctionModel` function, for one) run where an interrupt can stop them.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        async def relay() -> None:
            try:
                value = await on_user_thread(lambda: fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting future
                if not future.done():
                    future.set_exception(exc)
                return
            if not future.done():
                future.set_result(value)

        future.set_running_or_notify_cancel()
        self._loop.call_soon_threadsafe(self._loop.create_task, relay())
        return future


def user_thread_executor() -> UserThreadExecutor | None:
    """The executor to give pydantic-ai for this step, or `None` when sync callables may run inline."""
    if _caller.get() is None:
        return None
    return UserThreadExecutor(asyncio.get_running_loop())


def on_import_thread(fn: Callable[[], T]) -> concurrent.futures.Future[T]:
    """Start `fn`, which imports libraries (pydantic-ai and a provider's SDK take seconds the first time), on
    the import thread; any number of steps may wait for it with `awaited`.

    Awaited like this, the import holds neither the loop nor the caller: an interrupt cancels the waiting
    step at once, while the import itself runs to its end on its thread (only the main thread receives an
    interrupt), so no half-imported module is left in `sys.modules` and the next step finds it whole.
    """
    return _importer.submit(contextvars.copy_context().run, fn)


async def awaited(future: concurrent.futures.Future[T]) -> T:
    """Await `future` of another thread; a waiter that is cancelled leaves it running for the others."""
    return await asyncio.shield(asyncio.wrap_future(future))
