"""Model-written code may not end the process it runs in (the kernel, with everything the notebook holds in
memory) nor have a process started for it by one that is already running, under `read_only()` or
`no_network()`, through `nh_eval`, `nh_assign` and return expressions alike.

An attack that ends the process would end the test run too: each runs in a child process of its own, in a
session of its own (a signal to the process group reaches no one else), which reports what the model read
and then that it is still alive.
"""

from __future__ import annotations

import functools  # noqa: F401 - the model's expressions use the modules of this namespace
import multiprocessing
import multiprocessing.forkserver
import os
import socket  # noqa: F401
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import nighthawk as nh
from scripting import finish, model_code, scripted_executor

CHANNELS = ("nh_eval", "nh_assign", "return")

ENDINGS = {
    "os._exit": "os._exit(3)",
    "posix._exit": "__import__('posix')._exit(3)",
    "os.abort": "os.abort()",
    "os.kill of its own pid": "os.kill(os.getpid(), signal.SIGKILL)",
    "os.kill of its process group": "os.kill(0, signal.SIGKILL)",
    "os.killpg of its own group": "os.killpg(os.getpgid(0), signal.SIGKILL)",
    "signal.raise_signal": "signal.raise_signal(signal.SIGKILL)",
    "faulthandler._sigsegv": "faulthandler._sigsegv()",
    "faulthandler._sigabrt": "faulthandler._sigabrt()",
    "faulthandler._read_null": "faulthandler._read_null()",
    "faulthandler._fatal_error_c_thread": "faulthandler._fatal_error_c_thread()",
    "faulthandler timer that exits": "faulthandler.dump_traceback_later(0.05, exit=True)",
    "os._exit through a partial": "functools.partial(os._exit, 3)()",
    "a CPU-time limit already spent": "resource.setrlimit(resource.RLIMIT_CPU, (1, 1)) or sum(range(10**8))",
    "_signal.raise_signal": "__import__('_signal').raise_signal(signal.SIGKILL)",
    "_signal.alarm": "__import__('_signal').alarm(1)",
    "_signal.setitimer": "sys.modules['_signal'].setitimer(signal.ITIMER_REAL, 0.05)",
    "a second interpreter that ends the process": (
        "(i := sys.modules['builtins'].__import__(INTERPRETERS)).run_string(i.create(), 'import os; os._exit(3)')"
    ),
    "a second interpreter through importlib": (
        "(i := __import__('importlib').import_module(INTERPRETERS)).run_string(i.create(), 'import os; os._exit(3)')"
    ),
    "a code object that reads past its constants": (
        "copyreg.__newobj__(type(lambda: 0), (lambda: 5).__code__.replace(co_consts=()), {})()"
    ),
    "a code object made with CodeType": (
        "type(lambda: 0)(type((lambda: 0).__code__)(*[() if name == 'consts' else getattr((lambda: 5).__code__, "
        "'co_' + name) for name in CODE_FIELDS]), {})()"
    ),
    "a code object read by marshal": (
        "copyreg.__newobj__(type(lambda: 0), __import__('marshal').loads(__import__('marshal').dumps("
        "(lambda: 5).__code__.replace(co_consts=()))), {})()"
    ),
}

_PROGRAM = """
import copyreg, faulthandler, functools, os, resource, signal, sys, time
import nighthawk as nh
from scripting import finish, model_code, scripted_executor

INTERPRETERS = "_xxsubinterpreters" if sys.version_info < (3, 12) else "_interpreters"
CODE_FIELDS = (
    "argcount posonlyargcount kwonlyargcount nlocals stacksize flags code consts names varnames filename name "
    "qualname firstlineno linetable exceptiontable freevars cellvars"
).split()

@nh.natural_function
def look() -> object:
    result = None
    '''natural
    Look around; set <:result> or return what you found.
    '''
    return result

policies = {
    "read_only": nh.oversight.Oversight(runtime=nh.oversight.read_only().runtime),
    "no_network": nh.oversight.no_network(),
}
for policy, oversight in policies.items():
    for channel in ("nh_eval", "nh_assign", "return"):
        executor, script = scripted_executor(model_code(channel, EXPRESSION), [finish("return", return_expression="1")])
        with nh.run(executor), nh.scope(oversight=oversight):
            try:
                look()
                read = " ".join(str(getattr(part, "content", "")) for part in script.seen[1][-1].parts)
            except Exception as stopped:
                read = str(stopped)
        print(policy, channel, f"{policy} refused" in read, flush=True)
time.sleep(1.2)  # a timer the model set would have fired by now
print("alive", flush=True)
"""


def run_in_a_child(expression: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    program = tmp_path / "program.py"  # a file: a natural function's source must be readable
    program.write_text(textwrap.dedent(_PROGRAM).replace("EXPRESSION", repr(expression)))
    tests = Path(__file__).resolve().parent.parent
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, str(program)], env=environment, capture_output=True, text=True, timeout=180,
        start_new_session=True,
    )


@pytest.mark.parametrize("attack", sorted(ENDINGS))
def test_model_code_cannot_end_the_process(attack: str, tmp_path: Path) -> None:
    child = run_in_a_child(ENDINGS[attack], tmp_path)
    assert child.returncode == 0, child.stdout + child.stderr
    lines = child.stdout.split("\n")
    assert lines[-2] == "alive"
    assert [line.rsplit(" ", 1)[1] for line in lines[:-2]] == ["True"] * 6, child.stdout


# --- a process started by one already running ---------------------------------------------------------


@nh.natural_function
def look(p: str) -> object:
    result = None
    """natural
    Look at the file <p>; set <:result> or return what you found.
    """
    return result


def run_model_code(channel: str, expression: str, p: Path, oversight: nh.oversight.Oversight) -> str:
    executor, script = scripted_executor(model_code(channel, expression), [finish("return", return_expression="'gave up'")])
    with nh.run(executor), nh.scope(oversight=oversight):
        try:
            look(str(p))
        except (nh.NighthawkError, Exception) as stopped:
            return str(stopped)
    return " ".join(str(getattr(part, "content", "")) for part in script.seen[1][-1].parts)


@pytest.fixture(scope="module")
def fork_server() -> None:
    """multiprocessing's fork server, started by the user's own code before any step."""
    multiprocessing.forkserver.ensure_running()


POLICIES = {
    "read_only": lambda: nh.oversight.Oversight(runtime=nh.oversight.read_only().runtime),
    "no_network": nh.oversight.no_network,
}


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("channel", CHANNELS)
def test_a_fork_server_the_user_started_starts_no_process_for_model_code(
    policy: str, channel: str, fork_server: None, tmp_path: Path
) -> None:
    victim = tmp_path / "keep.txt"
    victim.write_text("precious")
    expression = (
        "(c := multiprocessing.get_context('forkserver').Process(target=os.remove, args=(p,))).start() or c.join(10)"
    )
    read = run_model_code(channel, expression, victim, POLICIES[policy]())
    assert victim.read_text() == "precious"
    assert f"{policy} refused" in read and "fork server" in read


def test_the_fork_server_is_known_by_another_spelling_of_its_address(fork_server: None, tmp_path: Path) -> None:
    victim = tmp_path / "keep.txt"
    victim.write_text("precious")
    address = multiprocessing.forkserver._forkserver._forkserver_address  # type: ignore[attr-defined]
    respelled = address.replace("/", "//", 1) if not address.startswith("\0") else address
    expression = f"socket.socket(socket.AF_UNIX).connect({respelled!r})"
    read = run_model_code("nh_eval", expression, victim, POLICIES["read_only"]())
    assert "read_only refused" in read and "fork server" in read


# --- a pool of worker processes the user started before the step -------------------------------------------

POOL_WORK = {
    "Pool.apply": "pool.apply(functools.partial(os.remove, p))",
    "Pool.map": "pool.map(os.remove, [p])",
    "Pool.imap_unordered": "list(pool.imap_unordered(os.remove, [p]))",
    "ProcessPoolExecutor.submit": "executor.submit(os.remove, p).result()",
    "ProcessPoolExecutor.map": "list(executor.map(os.remove, [p]))",
}


@pytest.fixture(scope="module")
def pools(fork_server: None) -> Iterator[None]:
    """A `multiprocessing` pool and a `ProcessPoolExecutor` of the user's, their workers already running."""
    import concurrent.futures

    context = multiprocessing.get_context("forkserver")
    pool = context.Pool(1)
    executor = concurrent.futures.ProcessPoolExecutor(1, mp_context=context)
    executor.submit(int).result()  # its workers start with the first piece of work
    globals().update(pool=pool, executor=executor)
    yield
    del globals()["pool"], globals()["executor"]
    pool.terminate()
    executor.shutdown()


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("attack", sorted(POOL_WORK))
def test_a_pool_of_processes_the_user_started_runs_no_work_for_model_code(
    policy: str, channel: str, attack: str, pools: None, tmp_path: Path
) -> None:
    victim = tmp_path / "keep.txt"
    victim.write_text("precious")
    read = run_model_code(channel, POOL_WORK[attack], victim, POLICIES[policy]())
    assert victim.read_text() == "precious"
    assert f"{policy} refused handing work to a pool of processes" in read
