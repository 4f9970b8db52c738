"""The runtime policies hold wherever a model-made value is at work, not only while the model's expression
runs: when Nighthawk scans it for secrets, validates it against an annotation or renders it; when a natural
function the model called looks at it; when a function the model built from new code, or a registration it
left behind, runs later in the user's own code. The user's own functions that Nighthawk calls on the way (a
validator, a `__repr__`) are the user's code and are not refused.
"""

from __future__ import annotations

import atexit
import code  # noqa: F401 - the model's expressions use the modules of this namespace
import contextlib  # noqa: F401 - the model's expressions use the modules of this namespace
import functools  # noqa: F401
import gc
import logging
import logging.handlers  # noqa: F401
import os
import socket
import timeit  # noqa: F401
import types  # noqa: F401
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import AfterValidator

import nighthawk as nh
from nighthawk import events
from scripting import call, finish, model_code, scripted_executor

CHANNELS = ("nh_eval", "nh_assign", "return")

READ_ONLY = lambda: nh.oversight.Oversight(runtime=nh.oversight.read_only().runtime)  # noqa: E731

hooks: list[Callable[..., object]] = []
"""A list of the user's, in the notebook's namespace, that the model's code can reach."""


@nh.natural_function
def look(p: str) -> object:
    result = None
    """natural
    Look at the file <p>; set <:result> or return what you found.
    """
    return result


def run_model_code(channel: str, expression: str, p: Path | str, oversight: nh.oversight.Oversight) -> str:
    executor, script = scripted_executor(model_code(channel, expression), [finish("return", return_expression="'gave up'")])
    with nh.run(executor), nh.scope(oversight=oversight):
        try:
            look(str(p))
        except (nh.NighthawkError, Exception) as stopped:
            return str(stopped)
    if script.requests < 2:
        return ""
    return " ".join(str(getattr(part, "content", "")) for part in script.seen[1][-1].parts)


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "keep.txt"
    path.write_text("precious")
    yield path
    hooks.clear()


def intact(victim: Path) -> bool:
    gc.collect()
    return victim.exists() and victim.read_text() == "precious"


# --- Nighthawk looking at the value ------------------------------------------------------------------------

LOOKED_AT = {
    "items of a dict subclass (the secret scan)": "type('D', (dict,), {'items': functools.partial(os.remove, p)})(a=1)",
    "__iter__ of a list subclass": "type('L', (list,), {'__iter__': functools.partial(map, os.remove, [p])})([1])",
}


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("attack", sorted(LOOKED_AT))
def test_a_value_whose_methods_change_files_is_held_while_nighthawk_looks_at_it(
    channel: str, attack: str, victim: Path
) -> None:
    seen: list[object] = []
    with events.listen(seen.append):
        run_model_code(channel, LOOKED_AT[attack], victim, READ_ONLY())
    assert intact(victim)
    # The log says "rejected" for the deletion, which did not run.
    assert any(isinstance(event, events.OversightDecision) and event.hook == "runtime" for event in seen)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.3)
    yield server
    server.close()


def untouched(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
        return False
    except TimeoutError:
        return True


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_list_whose_iteration_connects_is_held_while_nighthawk_looks_at_it(channel: str, listener: socket.socket) -> None:
    address = ("127.0.0.1", listener.getsockname()[1])
    expression = f"type('L', (list,), {{'__iter__': functools.partial(socket.create_connection, {address!r})}})([1])"
    run_model_code(channel, expression, "unused", nh.oversight.no_network())
    assert untouched(listener)


@nh.natural_function
def listing(p: str) -> list:
    """natural
    List what the file <p> holds and return it.
    """


def test_validating_a_return_value_does_not_run_what_the_value_holds(victim: Path) -> None:
    executor, script = scripted_executor(
        [finish("return", return_expression="map(os.remove, [p])")], [finish("return", return_expression="[]")]
    )
    with nh.run(executor), nh.scope(oversight=READ_ONLY()):
        assert listing(str(victim)) == []
    assert intact(victim)
    assert "read_only refused os.remove" in str(script.seen[1][-1].parts)


@nh.natural_function
def describe(thing: object) -> None:
    """natural
    Describe <thing>.
    """


def test_a_natural_function_the_model_calls_keeps_its_guard_for_what_the_model_made(victim: Path) -> None:
    expression = "describe(type('X', (), {'__repr__': lambda self: str(os.remove(p))})())"
    executor, script = scripted_executor([call("nh_eval", expression=expression)], [finish()], [finish()])
    with nh.run(executor), nh.scope(oversight=READ_ONLY()):
        look(str(victim))
    assert intact(victim)


# --- the user's own code on the way ------------------------------------------------------------------------

audit_log: list[str] = []


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return tmp_path / "notes.log"


def test_a_users_validator_on_a_write_binding_is_not_refused(notes: Path) -> None:
    def noted(value: int) -> int:
        notes.write_text(f"set to {value}")  # the user's own bookkeeping, outside any writable folder
        return value

    @nh.natural_function
    def count() -> int:
        total: Annotated[int, AfterValidator(noted)] = 0
        """natural
        Set <:total> to 5.
        """
        return total

    executor, _ = scripted_executor([call("nh_assign", target_path="total", expression="5")], [finish()])
    with nh.run(executor), nh.scope(oversight=nh.oversight.read_only()):
        assert count() == 5
    assert notes.read_text() == "set to 5"


class Report:
    """The user's class, whose `repr` keeps a note of being shown."""

    def __init__(self, notes: Path) -> None:
        self.notes = notes

    def __repr__(self) -> str:
        self.notes.write_text("shown")
        return "Report()"


def test_a_users_repr_called_to_render_a_tool_result_is_not_refused(notes: Path) -> None:
    @nh.natural_function
    def show(report: Report) -> None:
        """natural
        Look at <report>.
        """

    executor, script = scripted_executor([call("nh_eval", expression="report")], [finish()])
    with nh.run(executor), nh.scope(oversight=nh.oversight.read_only()):
        show(Report(notes))
    assert '"value": "Report()"' in script.last_tool_results()[0]
    assert notes.read_text() == "shown"


# --- functions the model builds, and registrations it leaves ---------------------------------------------

BUILT = {
    "types.FunctionType with fresh globals": (
        "hooks.append(types.FunctionType((lambda: os.remove(p)).__code__, {'os': os, 'p': p}))"
    ),
    "exec of new code into fresh globals": "hooks.append((lambda g: exec('def f(): os.remove(p)', g) or g['f'])({'os': os, 'p': p}))",
    "compile then FunctionType": (
        "hooks.append(types.FunctionType(compile('os.remove(p)', 'x', 'eval'), {'os': os, 'p': p}))"
    ),
    "a user function's __code__ replaced": (
        "hooks.append(tidy) or tidy.__setattr__('__code__', (lambda: os.remove(p)).__code__)"
    ),
}


def tidy() -> None:
    """The user's own function, which does nothing harmful."""


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("attack", sorted(BUILT))
def test_a_function_the_model_built_from_new_code_is_held_when_run_later(
    channel: str, attack: str, victim: Path
) -> None:
    original = tidy.__code__
    globals()["p"] = str(victim)  # (what `tidy`'s replaced code would look up)
    try:
        read = run_model_code(channel, BUILT[attack], victim, READ_ONLY())
        for hook in hooks:  # the user's own code, after the step
            with contextlib.suppress(OSError, NameError):
                hook()
    finally:
        tidy.__code__ = original
        del globals()["p"]
    assert intact(victim)
    assert "read_only refused" in read


COMPILED_BY_A_LIBRARY = {
    "timeit.Timer": "hooks.append(functools.partial(timeit.Timer('os.remove(p)', globals={'os': os, 'p': p}).timeit, 1))",
    "code.InteractiveInterpreter": (
        "hooks.append((lambda i: i.runsource('def f():\\n    os.remove(p)\\n', symbol='exec') or i.locals['f'])"
        "(code.InteractiveInterpreter({'os': os, 'p': p})))"
    ),
}


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("attack", sorted(COMPILED_BY_A_LIBRARY))
def test_code_a_library_compiled_for_the_model_is_held_when_run_later(channel: str, attack: str, victim: Path) -> None:
    run_model_code(channel, COMPILED_BY_A_LIBRARY[attack], victim, READ_ONLY())
    assert len(hooks) == 1
    with pytest.raises(nh.oversight.OperationRefusedError, match="read_only refused os.remove"):
        hooks[0]()  # the user's own code, after the step
    assert intact(victim)


def test_a_log_file_opened_on_the_first_record_is_refused_when_made(victim: Path) -> None:
    logger = logging.getLogger("nighthawk-test-late-file")
    globals()["logging"] = logging
    expression = "logger.addHandler(logging.FileHandler(p, 'w', delay=True))"
    try:
        read = run_model_code("nh_eval", expression.replace("logger", "logging.getLogger('nighthawk-test-late-file')"),
                              victim, READ_ONLY())
        logger.warning("the user's own record, after the step")
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
    assert intact(victim)
    assert "read_only refused opening" in read


def test_a_log_handler_that_connects_on_the_first_record_is_refused_when_made(listener: socket.socket) -> None:
    name = "nighthawk-test-late-socket"
    expression = f"logging.getLogger({name!r}).addHandler(logging.handlers.SocketHandler('127.0.0.1', {listener.getsockname()[1]}))"
    try:
        read = run_model_code("nh_eval", expression, "unused", nh.oversight.no_network())
        logging.getLogger(name).warning("the user's own record, after the step")
    finally:
        for handler in list(logging.getLogger(name).handlers):
            logging.getLogger(name).removeHandler(handler)
            handler.close()
    assert untouched(listener)
    assert "no_network refused socket.connect" in read


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_function_run_at_the_next_fork_is_refused(channel: str, victim: Path) -> None:
    read = run_model_code(channel, "os.register_at_fork(before=functools.partial(os.remove, p))", victim, READ_ONLY())
    child = os.fork()  # the user's own code forks later (multiprocessing does)
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    assert intact(victim)
    assert "read_only refused os.register_at_fork" in read


def test_a_function_run_at_thread_shutdown_is_refused(victim: Path) -> None:
    import threading

    before = len(threading._threading_atexits)  # type: ignore[attr-defined]
    globals()["threading"] = threading
    try:
        read = run_model_code("nh_eval", "threading._register_atexit(os.remove, p)", victim, READ_ONLY())
    finally:
        del globals()["threading"]
    assert len(threading._threading_atexits) == before  # type: ignore[attr-defined]
    assert "read_only refused threading._register_atexit" in read


@pytest.mark.parametrize("channel", CHANNELS)
def test_an_exit_function_registered_through_an_exit_stack_is_refused(channel: str, victim: Path) -> None:
    before = atexit._ncallbacks()  # type: ignore[attr-defined]
    expression = "(lambda s: s.callback(atexit.register, os.remove, p) and s.close())(contextlib.ExitStack())"
    globals()["atexit"] = atexit
    read = run_model_code(channel, expression, victim, READ_ONLY())
    assert atexit._ncallbacks() == before  # type: ignore[attr-defined]
    assert "read_only refused atexit.register" in read
