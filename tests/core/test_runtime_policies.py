"""`read_only()` enforced at run time: model-written code cannot change a file, however it is written.

The victim is a real file. Each way of deleting, overwriting or renaming it is tried as the model would
write it, through each channel model code runs by (`nh_eval`, the value expression of `nh_assign`, a
return expression), under `nh.oversight.read_only()`: the file stays as it was, and the model reads an
`execution` error naming what was refused. The same operations still work in the user's own code.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools  # noqa: F401 - the model's expressions use the modules of this namespace
import io  # noqa: F401
import json
import operator  # noqa: F401
import os
import pathlib  # noqa: F401
import shutil  # noqa: F401
import sqlite3
import subprocess
import sys  # noqa: F401
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy  # noqa: F401
import pandas  # noqa: F401
import pytest

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nighthawk as nh
from nighthawk import events, telemetry
from scripting import call, finish, model_code, scripted_executor

CHANNELS = ("nh_eval", "nh_assign", "return")

BYPASSES = {
    # a denied function used as a value
    "map": ("list(map(os.remove, [p]))", "os.remove"),
    "list item": ("[os.remove][0](p)", "os.remove"),
    "walrus": ("(f := os.remove)(p)", "os.remove"),
    "partial": ("functools.partial(os.remove, p)()", "os.remove"),
    "methodcaller": ("operator.methodcaller('unlink')(pathlib.Path(p))", "os.remove"),
    # names no deny list has
    "spawnlp": ("os.spawnlp(os.P_WAIT, 'rm', 'rm', p)", "os.fork"),
    "posix_spawnp": ("os.waitpid(os.posix_spawnp('rm', ['rm', p], dict(os.environ)), 0)", "os.posix_spawn"),
    "Path.rename": ("pathlib.Path(p).rename(p + '.moved')", "os.rename"),
    "Path.replace": ("pathlib.Path(p).replace(p + '.moved')", "os.rename"),
    "FileIO": ("io.FileIO(p, 'w')", "for writing"),
    "pandas to_json": ("pandas.DataFrame({'a': [1]}).to_json(p)", "for writing"),
    "numpy savetxt": ("numpy.savetxt(p, [1, 2])", "for writing"),
    "copyfile over it": ("[shutil.copyfile][0](os.devnull, p)", "shutil.copyfile"),
    # dynamic look-ups
    "getattr": ("getattr(os, 're' + 'move')(p)", "os.remove"),
    "vars": ("vars(os)['remove'](p)", "os.remove"),
    "sys.modules": ("sys.modules['os'].remove(p)", "os.remove"),
    "subclasses walk": (
        "[c for c in object.__subclasses__() if c.__name__ == '_wrap_close'][0].__init__.__globals__['remove'](p)",
        "os.remove",
    ),
    "os.open O_TRUNC": ("os.open(p, os.O_TRUNC | os.O_WRONLY)", "os.open(p, os.O_TRUNC | os.O_WRONLY)"),
    # the user's own function, called by the model
    "user function": ("tidy_up(p)", "os.remove"),
    # a thread, which runs under the policy too
    "thread": (
        "__import__('concurrent.futures').futures.ThreadPoolExecutor(1).submit(os.remove, p).result()", "os.remove"
    ),
}


def tidy_up(path: str) -> None:
    """A notebook helper that deletes: the model may call it, but not to delete under `read_only`."""
    os.remove(path)


def quietly(function: Any, *args: Any) -> str:
    """A helper that swallows the errors of what it calls."""
    try:
        function(*args)
    except OSError:
        return "caught"
    return "done"


@nh.natural_function
def look(p: str) -> object:
    result = None
    """natural
    Look at the file <p>; set <:result> or return what you found.
    """
    return result


def run_model_code(
    channel: str, expression: str, p: Path, oversight: nh.oversight.Oversight | None = None
) -> tuple[object, str]:
    """Run `look(p)` with a model that runs `expression` through `channel`, then gives up; what the block
    returned and the text the model read after its first answer (the tool result or the retry prompt; none
    when a return expression ended the step). A return expression the policy's reading refuses stops the
    step instead: then the error it raised."""
    executor, script = scripted_executor(model_code(channel, expression), [finish("return", return_expression="'gave up'")])
    with nh.run(executor), nh.scope(oversight=oversight or nh.oversight.read_only()):
        try:
            returned = look(str(p))
        except nh.oversight.OversightRejectedError as stopped:
            return stopped, str(stopped)
    if script.requests < 2:
        return returned, ""
    return returned, " ".join(str(getattr(part, "content", "")) for part in script.seen[1][-1].parts)


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "keep.txt"
    path.write_text("precious")
    yield path


def intact(victim: Path) -> bool:
    return victim.read_text() == "precious" and sorted(victim.parent.iterdir()) == [victim]


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("bypass", sorted(BYPASSES))
def test_read_only_keeps_the_file_intact_however_model_code_is_written(channel: str, bypass: str, victim: Path) -> None:
    expression, named = BYPASSES[bypass]
    _, read = run_model_code(channel, expression, victim)
    assert intact(victim)
    assert named in read
    assert "read_only refused" in read or "read-only:" in read


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_refusal_names_the_operation_its_target_and_the_policy(channel: str, victim: Path) -> None:
    _, read = run_model_code(channel, "[os.remove][0](p)", victim)
    assert f"OperationRefusedError: read_only refused os.remove of {str(victim)!r}" in read
    assert "model-written code may not change files under this policy" in read


@pytest.mark.parametrize("channel", CHANNELS)
def test_reading_files_still_works_under_read_only(channel: str, victim: Path) -> None:
    (victim.parent / "table.csv").write_text("a,b\n1,2\n")
    expression = "open(p).read() + str(len(pandas.read_csv(p.replace('keep.txt', 'table.csv'))))"
    executor, _ = scripted_executor(model_code(channel, expression), [finish("return", return_expression="result")])
    with nh.run(executor), nh.scope(oversight=nh.oversight.read_only()):
        returned = look(str(victim))
    assert returned == (None if channel == "nh_eval" else "precious1")


def test_the_same_operations_work_in_user_code_before_and_after_a_guarded_step(victim: Path) -> None:
    before = victim.parent / "before.txt"
    before.write_text("x")
    os.remove(before)
    run_model_code("nh_eval", "[os.remove][0](p)", victim)
    assert intact(victim)
    after = victim.parent / "after.txt"
    with io.FileIO(after, "w") as written:
        written.write(b"fine")
    worker = threading.Thread(target=os.rename, args=(after, victim.parent / "moved.txt"))
    worker.start()
    worker.join()
    os.remove(victim)
    assert sorted(path.name for path in victim.parent.iterdir()) == ["moved.txt"]


def test_another_thread_changes_files_freely_while_model_code_runs(victim: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.txt"
    other.write_text("goes")
    started, done = threading.Event(), threading.Event()

    def user_thread() -> None:
        started.wait(10)
        os.remove(other)
        done.set()

    def meanwhile() -> bool:
        """Let the user's thread work while the model's code is running."""
        started.set()
        done.wait(10)
        return other.exists()

    worker = threading.Thread(target=user_thread)
    worker.start()
    globals()["meanwhile"] = meanwhile
    try:
        executor, script = scripted_executor([call("nh_eval", expression="meanwhile()")], [finish()])
        with nh.run(executor), nh.scope(oversight=nh.oversight.read_only()):
            look(str(victim))
    finally:
        del globals()["meanwhile"]
        worker.join()
    assert json.loads(script.last_tool_results()[0]) == {"value": False, "error": None}


@pytest.mark.parametrize("channel", CHANNELS)
def test_writable_directories_let_model_code_write_inside_them_only(channel: str, victim: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    inside = f"open({str(scratch / 'out.txt')!r}, 'w').write('made')"
    returned, read = run_model_code(channel, inside, victim, nh.oversight.read_only(writable=[scratch]))
    assert (scratch / "out.txt").read_text() == "made"
    assert "refused" not in read
    _, read = run_model_code(channel, "os.remove(p)", victim, nh.oversight.read_only(writable=[scratch]))
    assert victim.read_text() == "precious"
    assert f"read_only refused os.remove of {str(victim)!r}: model-written code may not change files outside" in read


def test_a_symlink_inside_a_writable_directory_does_not_reach_out_of_it(victim: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "link.txt").symlink_to(victim)
    _, read = run_model_code(
        "nh_eval", f"open({str(scratch / 'link.txt')!r}, 'w')", victim, nh.oversight.read_only(writable=[scratch])
    )
    assert victim.read_text() == "precious"
    assert "read_only refused opening" in read


def test_importing_a_module_for_the_first_time_still_works_under_the_runtime_guard(victim: Path, tmp_path: Path) -> None:
    package = tmp_path / "modules"
    package.mkdir()
    (package / "nh_fresh_module.py").write_text("VALUE = 42\n")
    sys.path.insert(0, str(package))
    runtime_only = nh.oversight.Oversight(runtime=nh.oversight.read_only().runtime)
    try:
        returned, _ = run_model_code(
            "return", "__import__('importlib').import_module('nh_fresh_module').VALUE", victim, runtime_only
        )
    finally:
        sys.path.remove(str(package))
        sys.modules.pop("nh_fresh_module", None)
    assert returned == 42
    assert not (package / "__pycache__").exists()  # its bytecode was not written, silently


def test_sqlite_opens_a_database_read_only_but_not_to_change_it(victim: Path, tmp_path: Path) -> None:
    database = tmp_path / "data.db"
    with sqlite3.connect(database) as connection:
        connection.execute("create table t (x)")
        connection.execute("insert into t values (1)")
    connection.close()
    _, read = run_model_code("nh_eval", f"sqlite3.connect({str(database)!r}).execute('drop table t')", victim)
    assert "read_only refused sqlite3.connect" in read
    assert "mode=ro" in read
    uri = f"file:{database}?mode=ro"
    returned, _ = run_model_code(
        "return", f"sqlite3.connect({uri!r}, uri=True).execute('select count(*) from t').fetchone()[0]", victim
    )
    assert returned == 1


def test_a_natural_function_called_by_guarded_model_code_cannot_shed_the_guard(victim: Path) -> None:
    @nh.natural_function
    def tidy(p: str) -> object:
        """natural
        Tidy <p>.
        """

    def tidy_without_oversight(path: str) -> object:
        with nh.scope(oversight=None):
            return tidy(path)

    # One script for both steps, in the order they ask: the outer call, the inner step's two answers.
    executor, script = scripted_executor(
        [call("nh_eval", expression="tidy_without_oversight(p)")],
        [finish("return", return_expression="os.remove(p)")],
        [finish("return", return_expression="'inner gave up'")],
        [finish()],
    )
    globals()["tidy_without_oversight"] = tidy_without_oversight
    try:
        with nh.run(executor), nh.scope(oversight=nh.oversight.read_only()):
            look(str(victim))
    finally:
        del globals()["tidy_without_oversight"]
    assert intact(victim)
    assert json.loads(script.last_tool_results()[0]) == {"value": "inner gave up", "error": None}


def test_each_refusal_is_an_oversight_decision_of_the_runtime(victim: Path) -> None:
    seen: list[Any] = []
    with events.listen(seen.append):
        run_model_code("nh_eval", "[os.remove][0](p)", victim)
    (refusal,) = [event for event in seen if isinstance(event, events.OversightDecision) and event.hook == "runtime"]
    assert (refusal.oversight, refusal.decision, refusal.tool_name) == ("read_only", "rejected", "nh_eval")
    assert refusal.reason == f"read_only refused os.remove of {str(victim)!r}: model-written code may not change files under this policy"


def test_a_refusal_swallowed_by_the_code_the_model_calls_is_still_recorded(victim: Path) -> None:
    seen: list[Any] = []
    with events.listen(seen.append):
        _, read = run_model_code("nh_eval", "quietly(os.remove, p)", victim)
    assert intact(victim)
    assert '"value": "caught"' in read
    assert any(isinstance(event, events.OversightDecision) and event.hook == "runtime" for event in seen)


def test_a_refusal_is_an_event_on_the_step_span(victim: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with events.listen(telemetry.OpenTelemetryListener(tracer_provider=provider)):
        run_model_code("nh_eval", "[os.remove][0](p)", victim)
    (step,) = [span for span in exporter.get_finished_spans() if span.name == "nighthawk.step"]
    (event,) = [
        event
        for event in step.events
        if event.name == "nighthawk.oversight.decision" and event.attributes["nighthawk.oversight.hook"] == "runtime"
    ]
    assert event.attributes["nighthawk.oversight.verdict"] == "rejected"
    assert event.attributes["nighthawk.oversight.tool_name"] == "nh_eval"
    assert str(event.attributes["nighthawk.oversight.reason"]).startswith("read_only refused os.remove of ")


def test_user_code_can_catch_the_refusal_as_a_permission_error() -> None:
    assert issubclass(nh.oversight.OperationRefusedError, PermissionError)
    assert nh.OperationRefusedError is nh.oversight.OperationRefusedError


# --- the reading that names a refused call before it runs -------------------------------------------------


@pytest.fixture
def plain_directory() -> Iterator[Path]:
    """A directory whose path has none of the letters of a writing mode (`w`, `a`, `x`, `+`)."""
    directory = Path(f"/tmp/nh-{os.getpid()}-{threading.get_ident() % 1000}")
    directory.mkdir()
    yield directory
    shutil.rmtree(directory)


def test_reading_names_os_open_with_o_trunc_on_a_literal_path(plain_directory: Path) -> None:
    victim = plain_directory / "keep.log"
    victim.write_text("precious")
    _, read = run_model_code("nh_eval", f"os.open({str(victim)!r}, os.O_TRUNC | os.O_WRONLY)", victim)
    assert victim.read_text() == "precious"
    assert f"read-only: `os.open({str(victim)!r}, os.O_TRUNC | os.O_WRONLY)` opens a file for writing" in read


def test_reading_does_not_take_a_path_with_an_x_for_a_mode(plain_directory: Path) -> None:
    box = plain_directory / "box.txt"
    box.write_text("inside")
    _, read = run_model_code("nh_eval", f"os.read(os.open({str(box)!r}, os.O_RDONLY), 6)", box)
    assert read.startswith('{"value": "b\'inside\'", "error": null')


@pytest.mark.parametrize(
    ("expression", "named"),
    [("os.kill(os.getpid(), 0)", "os.kill"), ("os.system('true')", "os.system")],
)
def test_read_only_refuses_signals_and_processes(victim: Path, expression: str, named: str) -> None:
    runtime_only = nh.oversight.Oversight(runtime=nh.oversight.read_only().runtime)
    _, read = run_model_code("nh_eval", expression, victim, runtime_only)
    assert f"read_only refused {named}" in read


def test_a_tree_inside_a_writable_directory_can_be_removed(victim: Path, tmp_path: Path) -> None:
    # `shutil.rmtree` removes entries relative to descriptors of the directories it walks.
    tree = tmp_path / "scratch" / "tree"
    (tree / "deeper").mkdir(parents=True)
    (tree / "deeper" / "leaf.txt").write_text("x")
    _, read = run_model_code(
        "nh_eval", f"shutil.rmtree({str(tree)!r})", victim, nh.oversight.read_only(writable=[tmp_path / "scratch"])
    )
    assert '"error": null' in read
    assert not tree.exists()


async def remove_later(path: str) -> None:
    """A coroutine function of the notebook: its body runs only when the step awaits it."""
    await asyncio.sleep(0)
    os.remove(path)


@nh.natural_function
async def look_async(p: str) -> None:
    """natural
    Look at the file <p>.
    """


@pytest.mark.parametrize("expression", ["remove_later(p)", "await remove_later(p)"])
def test_a_coroutine_of_model_code_is_awaited_under_the_policy(victim: Path, expression: str) -> None:
    executor, script = scripted_executor([call("nh_eval", expression=expression)], [finish()])

    async def main() -> None:
        with nh.run(executor), nh.scope(oversight=nh.oversight.read_only()):
            await look_async(str(victim))

    asyncio.run(main())
    assert intact(victim)
    assert "read_only refused os.remove" in script.last_tool_results()[0]


def test_read_only_sent_to_another_process_is_enforced_there(victim: Path) -> None:
    # How `nighthawk.ray` sends the oversight in force to its actors: by value, with cloudpickle.
    cloudpickle = pytest.importorskip("ray.cloudpickle")
    sent = cloudpickle.dumps(nh.oversight.read_only())
    code = (
        "import sys, pickle, os\n"
        "from nighthawk.oversight._oversee import guarding, overseeing\n"
        "policy = pickle.loads(sys.stdin.buffer.read())\n"
        "with overseeing(policy), guarding(None, 'nh_eval'):\n"
        "    try:\n"
        f"        [os.remove][0]({str(victim)!r})\n"
        "    except PermissionError as refused:\n"
        "        print(str(refused).splitlines()[0])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], input=sent, capture_output=True, check=True)
    assert result.stdout.decode().startswith(f"read_only refused os.remove of {str(victim)!r}")
    assert intact(victim)


def after(gate: threading.Event, outcome: concurrent.futures.Future[str], function: Any, *args: Any) -> None:
    """A notebook helper: call `function` once `gate` is set, and tell in `outcome` how it went."""
    gate.wait(10)
    try:
        function(*args)
    except OSError as refused:
        outcome.set_result(f"refused: {refused}")
    else:
        outcome.set_result("done")


@pytest.fixture
def users_pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    """The user's own thread pool, made before the step and named `POOL` in the notebook."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    globals()["POOL"] = pool
    yield pool
    del globals()["POOL"]
    pool.shutdown()


def test_a_users_pool_worker_started_during_a_guarded_step_runs_the_users_later_work(
    victim: Path, users_pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    _, read = run_model_code("nh_eval", "POOL.submit(sum, [1, 2]).result()", victim)  # starts the pool's worker
    assert '"value": 3' in read
    assert users_pool.submit(os.remove, victim).result() is None
    assert not victim.exists()


def test_work_the_model_hands_to_a_running_pool_is_held_by_its_worker(
    victim: Path, users_pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    users_pool.submit(int).result()  # the worker runs before the step
    _, read = run_model_code("nh_eval", "POOL.submit(os.remove, p).result()", victim)
    assert intact(victim)
    assert "read_only refused os.remove" in read


def test_work_a_function_the_model_made_hands_to_a_pool_after_the_step_is_held(
    victim: Path, users_pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    users_pool.submit(int).result()  # the worker runs before (a function the model made may not start one)
    kept: dict[str, Any] = {}
    globals()["KEPT"] = kept
    try:
        run_model_code("nh_eval", "KEPT.update(later=lambda: POOL.submit(os.remove, p))", victim)
    finally:
        del globals()["KEPT"]
    with pytest.raises(PermissionError, match="read_only refused os.remove"):
        kept["later"]().result()  # the user calls it after the step
    assert intact(victim)


def test_a_thread_the_model_starts_stays_held_after_the_step(victim: Path) -> None:
    gate, outcome = threading.Event(), concurrent.futures.Future[str]()
    globals().update(GATE=gate, OUTCOME=outcome)
    try:
        run_model_code(
            "nh_eval", "threading.Thread(target=after, args=(GATE, OUTCOME, os.remove, p)).start()", victim
        )
    finally:
        del globals()["GATE"], globals()["OUTCOME"]
    gate.set()  # the step is over: the thread the model left running removes the file now
    assert outcome.result(timeout=10).startswith("refused: read_only refused os.remove")
    assert intact(victim)
