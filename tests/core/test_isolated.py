"""Under `nh.oversight.isolated()`, the model's code of a step runs in a child process the operating system
walls in (Landlock, seccomp, a pid namespace, resource limits): what it tries against files, the network,
other processes or the kernel itself leaves them as they were, and the step says what happened.

This test process plays the kernel: an attack that got through would delete the test's files or end it.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import nighthawk as nh
from isolated_steps import look, run_isolated
from scripting import finish, model_code, scripted_executor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")


def step_error(expression: str, channel: str = "nh_eval", **walls: object) -> nh.errors.IsolationError:
    executor, _ = scripted_executor(model_code(channel, expression), [finish("return", return_expression="result")])
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated(**walls)):  # type: ignore[arg-type]
        with pytest.raises(nh.errors.IsolationError) as raised:
            look()
    return raised.value


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "keep" / "victim.txt"
    path.parent.mkdir()
    path.write_text("precious")
    return path


def children() -> set[int]:
    """The processes (zombies included) whose parent is this one."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            stat = Path("/proc", entry, "stat").read_text() if entry.isdigit() else ""
        except OSError:
            continue  # ended meanwhile
        if stat and int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
            found.add(int(entry))
    return found


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    before = children()
    yield
    # Every process an isolated step made is gone, and reaped: by a thread of its own, after the step (a fork
    # bomb's hundreds of copies take seconds to tear down on a loaded machine).
    deadline = time.monotonic() + 60
    while not children() <= before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert children() <= before


# --- files ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("channel", ["nh_eval", "nh_assign", "return"])
def test_deleting_a_file_outside_writable_is_refused(victim: Path, channel: str) -> None:
    read = run_isolated(channel, f"__import__('os').remove({str(victim)!r})")
    assert victim.read_text() == "precious"
    assert "Permission denied" in read


@pytest.mark.parametrize(
    "expression",
    ["__import__('os').truncate({p!r}, 0)", "open({p!r}, 'w')", "__import__('pathlib').Path({p!r}).write_text('')"],
)
def test_truncating_a_file_outside_writable_is_refused(victim: Path, expression: str) -> None:
    read = run_isolated("nh_eval", expression.format(p=str(victim)))
    assert victim.read_text() == "precious"
    assert "Permission denied" in read


def test_creating_a_file_outside_writable_is_refused(victim: Path) -> None:
    created = victim.parent / "new.txt"
    read = run_isolated("nh_eval", f"open({str(created)!r}, 'x')")
    assert not created.exists()
    assert "Permission denied" in read


def test_a_writable_folder_is_writable(tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.txt"
    target.parent.mkdir()
    run_isolated("nh_eval", f"__import__('pathlib').Path({str(target)!r}).write_text('done')", writable=[target.parent])
    assert target.read_text() == "done"


def test_a_process_the_model_starts_is_walled_too(victim: Path) -> None:
    run_isolated("nh_eval", f"__import__('subprocess').run(['sh', '-c', 'echo gone > {victim}; rm -f {victim}'])")
    assert victim.read_text() == "precious"


def test_ctypes_system_is_walled(victim: Path) -> None:
    run_isolated("nh_eval", f"__import__('ctypes').CDLL(None).system(b'rm -f {victim}')")
    assert victim.read_text() == "precious"


def test_a_subinterpreter_is_walled(victim: Path) -> None:
    if sys.version_info >= (3, 13):
        expression = "(i := __import__('_interpreters')).exec(i.create(), {code!r})"
    else:
        expression = "(i := __import__('_xxsubinterpreters')).run_string(i.create(), {code!r})"
    run_isolated("nh_eval", expression.format(code=f"import os; os.remove({str(victim)!r})"))
    assert victim.read_text() == "precious"


# --- the network ----------------------------------------------------------------------------------------


@pytest.fixture
def tcp_server() -> Iterator[tuple[socket.socket, int]]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    yield server, server.getsockname()[1]
    server.close()


def test_connecting_over_tcp_is_refused(tcp_server: tuple[socket.socket, int]) -> None:
    server, port = tcp_server
    read = run_isolated("nh_eval", f"__import__('socket').create_connection(('127.0.0.1', {port}), timeout=2)")
    with pytest.raises(TimeoutError):
        server.accept()
    assert "Permission denied" in read


@pytest.mark.parametrize("payload", [b"hello", b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"])
def test_sending_udp_or_a_dns_query_is_refused(payload: bytes) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        read = run_isolated(
            "nh_eval", f"(s := __import__('socket')).socket(s.AF_INET, s.SOCK_DGRAM).sendto({payload!r}, ('127.0.0.1', {port}))"
        )
        with pytest.raises(TimeoutError):
            listener.recvfrom(512)
    finally:
        listener.close()
    assert "Permission denied" in read


def test_a_unix_datagram_to_a_path_is_refused(tmp_path: Path) -> None:
    # `sendto` a path needs no `connect`: were Unix sockets allowed, the child could write to /dev/log.
    path = str(tmp_path / "log.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    listener.settimeout(0.5)
    try:
        read = run_isolated("nh_eval", f"(s := __import__('socket')).socket(s.AF_UNIX, s.SOCK_DGRAM).sendto(b'<13>forged', {path!r})")
        with pytest.raises(TimeoutError):
            listener.recv(512)
    finally:
        listener.close()
    assert "Permission denied" in read


def test_a_name_look_up_reaches_no_resolver() -> None:
    read = run_isolated("nh_eval", "__import__('socket').getaddrinfo('nighthawk.example', 443)")
    assert "gaierror" in read


def test_network_true_lets_the_child_connect(tcp_server: tuple[socket.socket, int]) -> None:
    server, port = tcp_server
    run_isolated("nh_eval", f"__import__('socket').create_connection(('127.0.0.1', {port}), timeout=2).close()", network=True)
    server.accept()[0].close()


# --- the terminal ---------------------------------------------------------------------------------------


def test_the_child_leaves_the_kernels_session_and_terminal() -> None:
    read = run_isolated("nh_eval", "(o := __import__('os')).getsid(0) == o.getpid()")
    assert '"value": true' in read


def test_typing_into_a_terminal_is_refused() -> None:
    read = run_isolated("nh_eval", "__import__('fcntl').ioctl(0, __import__('termios').TIOCSTI, b'x')")
    assert "Operation not permitted" in read


# --- the child's end ------------------------------------------------------------------------------------


def test_os_exit_ends_the_step_not_the_kernel() -> None:
    error = step_error("__import__('os')._exit(3)")
    assert "exited with status 3" in str(error)
    assert "nothing was committed" in str(error)


def test_a_segfault_ends_the_step_not_the_kernel() -> None:
    assert "crashed (SIGSEGV)" in str(step_error("__import__('ctypes').string_at(0)"))


def test_raise_signal_kill_ends_the_step_not_the_kernel() -> None:
    assert "SIGKILL" in str(step_error("__import__('_signal').raise_signal(9)"))


def test_a_return_expression_that_kills_the_child_ends_the_step() -> None:
    assert "exited with status 4" in str(step_error("__import__('os')._exit(4)", channel="return"))


def test_a_fork_bomb_stops_at_the_process_bound() -> None:
    read = run_isolated("nh_eval", "[__import__('os').fork() for _ in range(100_000)]")
    assert "BlockingIOError" in read


def test_a_memory_hog_gets_a_memory_error() -> None:
    read = run_isolated("nh_eval", "[bytearray(2**24) for _ in range(1000)]", memory_mb=256)
    assert "MemoryError" in read


def test_a_cpu_hog_is_ended_at_its_cpu_limit() -> None:
    assert "ran out of CPU time" in str(step_error("sum(range(10**12))", cpu_seconds=1))


def test_the_wall_time_budget_kills_the_child() -> None:
    executor, _ = scripted_executor(
        model_code("nh_eval", "__import__('time').sleep(60)"), step_budget=nh.UsageBudget(wall_time_s=1.5)
    )
    started = time.monotonic()
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        with pytest.raises(nh.BudgetExceededError):
            look()
    assert time.monotonic() - started < 30


def test_ctrl_c_stops_the_child() -> None:
    executor, _ = scripted_executor(model_code("nh_eval", "__import__('time').sleep(60)"))
    timer = threading.Timer(1.0, lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT))  # type: ignore[arg-type]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                look()
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


def test_a_nonsense_answer_kills_the_child_but_reaps_it_off_the_steps_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reaping waits for the kernel to tear the child's memory down: never on the loop, which other steps share,
    # nor on the step's path at all (the reaper's thread waits).
    import asyncio
    import subprocess
    from types import SimpleNamespace

    from nighthawk.oversight.isolation import _parent, _reaping

    child = _parent._Child(SimpleNamespace(step_id="s1"), nh.oversight.isolated().isolation, SimpleNamespace())  # type: ignore[arg-type]
    sleeper = subprocess.Popen(["sleep", "60"])
    child.temp_dir = str(Path(tempfile.mkdtemp(prefix="nighthawk-isolated-")))
    child.channel, theirs = socket.socketpair()
    child.forked = _parent._Alone(sleeper.pid, grouped=False, temp_dir=child.temp_dir, cpu_seconds=60)
    reaped = threading.Event()
    waits: list[int] = []
    waitpid = os.waitpid

    def waiting(pid: int, options: int) -> tuple[int, int]:
        waits.append(threading.get_ident())
        try:
            return waitpid(pid, options)
        finally:
            reaped.set()

    monkeypatch.setattr(_reaping.os, "waitpid", waiting)

    async def step() -> int:
        assert isinstance(child._unexpected(("nonsense",)), nh.errors.IsolationError)
        await child.aclose()
        return threading.get_ident()

    loop_thread = asyncio.run(step())
    theirs.close()
    sleeper.returncode = -signal.SIGKILL  # reaped by the reaper, not by Popen
    assert reaped.wait(10)
    assert waits and loop_thread not in waits and threading.main_thread().ident not in waits
    deadline = time.monotonic() + 10
    while os.path.exists(child.temp_dir) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not os.path.exists(child.temp_dir)  # removed once the child is reaped


def test_no_temporary_folder_is_left_when_the_process_ends_right_after_an_isolated_step(tmp_path: Path) -> None:
    # The reaper removes a child's folder after the step; the interpreter's exit waits for it to finish.
    import subprocess

    script = tmp_path / "step.py"
    script.write_text(
        "import nighthawk as nh\n"
        "from scripting import finish, model_code, scripted_executor\n\n\n"
        "@nh.natural_function\n"
        "def look() -> object:\n"
        "    result = None\n"
        '    """natural\n'
        "    Set <:result>.\n"
        '    """\n'
        "    return result\n\n\n"
        "executor, _ = scripted_executor(model_code('nh_assign', \"__import__('tempfile').gettempdir()\", target='result'), "
        "[finish('return', return_expression='result')])\n"
        "with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):\n"
        "    print(look())\n"
    )
    temp = tmp_path / "temp"
    temp.mkdir()
    environment = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": os.pathsep.join(sys.path)}
    finished = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip().startswith(str(temp / "nighthawk-isolated-"))  # the step ran in its child's folder
    assert list(temp.iterdir()) == []


def pending_kill(pid: int) -> bool:
    """Whether process `pid` is gone, a zombie, or has SIGKILL pending: it runs no further instruction of its own."""
    try:
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    except OSError:
        return True
    pending = int(status["SigPnd"], 16) | int(status["ShdPnd"], 16)
    return status["State"].split()[0] in ("Z", "X") or bool(pending & 1 << (signal.SIGKILL - 1))


def test_the_steps_end_kills_every_process_its_child_started_at_once(tmp_path: Path) -> None:
    # The child is reaped after the step returns; what it started must not run on meanwhile.
    if os.geteuid() != 0:
        pytest.skip("the worker leads its process group only where the kernel forks it into its namespace (root)")
    tag, log = f"{os.getpid()}{time.monotonic_ns() % 10**6}", tmp_path / "started.log"
    start = f"echo started >> {log}; exec sleep {tag}"
    executor, _ = scripted_executor(
        model_code("nh_eval", f"[__import__('subprocess').Popen(['sh', '-c', {start!r}]) for _ in range(3)] and __import__('time').sleep(0.5)"),
        [finish("return", return_expression="result")],
    )
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated(writable=[tmp_path])):
        look()
        sleepers = [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _cmdline(entry) == f"sleep\0{tag}\0"]
        assert all(pending_kill(pid) for pid in sleepers)
    assert log.read_text() == "started\n" * 3


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def test_ctrl_c_right_after_the_namespace_is_made_leaves_the_kernel_in_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # As root the kernel's thread enters a new pid namespace to fork the child: an interrupt there must
    # still find the thread back in the kernel's namespace, and the forked child ended.
    from nighthawk.oversight.isolation import _tree

    if os.geteuid() != 0:
        pytest.skip("the kernel's thread enters the namespace only as root")
    real = _tree._libc

    class InterruptedRightAfterUnshare:
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def unshare(self, flags: int) -> int:
            made = real.unshare(flags)
            signal.raise_signal(signal.SIGINT)  # Ctrl-C, due at the next instruction
            return made

    monkeypatch.setattr(_tree, "_libc", InterruptedRightAfterUnshare())
    executor, _ = scripted_executor(model_code("nh_eval", "1"))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
            with pytest.raises(KeyboardInterrupt):
                look()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert os.readlink("/proc/thread-self/ns/pid_for_children") == os.readlink("/proc/self/ns/pid")


# --- values on their way back ---------------------------------------------------------------------------


def test_a_return_value_comes_back_equal() -> None:
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"city": ["Oslo", "Lima", "Pune"], "sales": [3.5, 1.25, 8.0]})
    executor, _ = scripted_executor([finish("return", return_expression="(data.shape, data.sales.sum(), data)")])
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        shape, total, returned = look(frame)
    assert (shape, total) == ((3, 2), 12.75)
    pandas.testing.assert_frame_equal(returned, frame)


def test_a_write_binding_set_by_nh_assign_is_committed() -> None:
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"sales": [3.5, 1.25, 8.0]})
    executor, _ = scripted_executor(
        model_code("nh_assign", "frame.describe()", target="stats"), [finish("pass")]
    )

    @nh.natural_function
    def describe(frame: object) -> object:
        stats = None
        """natural
        Describe <frame> into <:stats>.
        """
        return stats

    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        stats = describe(frame)
    pandas.testing.assert_frame_equal(stats, frame.describe())


def test_names_a_call_sets_are_seen_by_the_next_call() -> None:
    executor, script = scripted_executor(
        model_code("nh_eval", "(scratch := 40)"), model_code("nh_eval", "scratch + 2"), [finish("return", return_expression="scratch + 2")]
    )
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        assert look() == 42
    assert script.last_tool_results() == ['{"value": 42, "error": null}']


def test_an_in_place_change_stays_in_the_child() -> None:
    items = [1, 2, 3]
    executor, _ = scripted_executor(model_code("nh_eval", "data.append(4)"), [finish("return", return_expression="len(data)")])
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        assert look(items) == 4  # the child's copy grew
    assert items == [1, 2, 3]  # the kernel's did not


def test_a_value_that_cannot_be_pickled_is_refused_by_name() -> None:
    read = run_isolated("nh_assign", "lambda: 1")
    assert "`result` holds function" in read and "cannot be sent from the isolated child" in read


def test_an_unpicklable_return_value_is_a_step_error_that_names_it() -> None:
    read = run_isolated("return", "(x for x in ())")
    assert "the return value holds generator" in read


def test_a_big_dataframe_is_readable_in_the_child() -> None:
    numpy = pytest.importorskip("numpy")
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(numpy.ones((1_000_000, 13)))  # about 100 MB, shared with the child, not copied
    executor, _ = scripted_executor([finish("return", return_expression="float(data.to_numpy().sum())")])
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        assert look(frame) == 13_000_000.0


def test_the_kernel_refuses_a_pickle_that_calls_a_function() -> None:
    # The model's code may control what the child sends: a value whose pickle would call `os.system` crosses as
    # its class and fields, never as its `__reduce__`, and a class the step made is not in the kernel: refused in
    # the child (a forged answer is refused in the kernel: `test_isolated_values.py`).
    expression = "type('Evil', (), {'__reduce__': lambda self: (__import__('os').system, ('true',))})()"
    executor, script = scripted_executor(model_code("nh_assign", expression), [finish("return", return_expression="None")])
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        look()
    told = " ".join(script.last_tool_results())
    assert "cannot be sent from the isolated child" in told and "no class isolated_steps.Evil in the kernel" in told


def test_a_forged_answer_cannot_make_the_kernel_load_a_library(monkeypatch: pytest.MonkeyPatch) -> None:
    # The model's code writes its own frame to the channel: `copyreg._reconstructor(CDLL, CDLL, path)`, with
    # CDLL reached by a dotted name through a module of the package (which imports ctypes).
    import ctypes

    loaded: list[object] = []
    load = ctypes.CDLL.__init__

    def recorded(self: ctypes.CDLL, name: str | None, *args: object, **kwargs: object) -> None:
        loaded.extend([name] if name else [])  # libc itself (`None`) is the walls' own
        load(self, name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ctypes.CDLL, "__init__", recorded)
    forge = """
import os, socket, struct
def push(module, name):
    return b"\\x8c" + bytes([len(module)]) + module + b"\\x8c" + bytes([len(name)]) + name + b"\\x93"
cdll = push(b"nighthawk.oversight.isolation._tree", b"ctypes.CDLL")
p = b"\\x80\\x05" + push(b"copyreg", b"_reconstructor") + cdll + cdll + b"\\x8c\\x0c/tmp/evil.so\\x87R."
for fd in range(3, 64):
    try:
        channel = socket.socket(fileno=os.dup(fd))  # a copy: closing it leaves the channel open
    except OSError:
        continue
    if channel.family == socket.AF_UNIX and channel.type == socket.SOCK_STREAM:
        channel.sendall(struct.pack("!Q", len(p)) + p)
"""
    read = run_isolated("nh_eval", f"exec({forge!r})")
    assert loaded == []
    assert read.startswith("IsolationError")  # the refused answer ended the child, and with it the step


# --- where it cannot run --------------------------------------------------------------------------------


def test_without_landlock_isolated_refuses_to_run(monkeypatch: pytest.MonkeyPatch, victim: Path) -> None:
    from nighthawk.oversight.isolation import _parent

    monkeypatch.setattr(_parent, "abi_version", lambda: 0)
    executor, _ = scripted_executor(model_code("nh_eval", f"__import__('os').remove({str(victim)!r})"))
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        with pytest.raises(nh.errors.IsolationUnavailableError, match="no Landlock"):
            look()
    assert victim.read_text() == "precious"


def test_before_linux_6_14_isolated_refuses_to_run_and_leaves_the_hosts_pid_max(monkeypatch: pytest.MonkeyPatch, victim: Path) -> None:
    from nighthawk.oversight.isolation import _parent

    host_pid_max = Path("/proc/sys/kernel/pid_max").read_text()
    old = os.uname_result(("Linux", "host", "6.13.7-generic", "#1 SMP", "x86_64"))
    monkeypatch.setattr(_parent.os, "uname", lambda: old)
    executor, _ = scripted_executor(model_code("nh_eval", f"__import__('os').remove({str(victim)!r})"))
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        with pytest.raises(nh.errors.IsolationUnavailableError, match=r"Linux 6\.14 .*this kernel is 6\.13\.7-generic"):
            look()
    assert victim.read_text() == "precious"
    assert Path("/proc/sys/kernel/pid_max").read_text() == host_pid_max


def test_off_linux_isolated_refuses_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from nighthawk.oversight.isolation import _parent

    monkeypatch.setattr(_parent.sys, "platform", "darwin")
    executor, _ = scripted_executor(model_code("nh_eval", "1"))
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        with pytest.raises(nh.errors.IsolationUnavailableError, match="need Linux"):
            look()


def test_combine_keeps_the_isolation() -> None:
    combined = nh.oversight.combine(nh.oversight.read_only(), nh.oversight.isolated())
    assert combined.isolation == nh.oversight.isolated().isolation
    with pytest.raises(TypeError, match="one `isolated"):
        nh.oversight.combine(nh.oversight.isolated(), nh.oversight.isolated(network=True))


def test_a_writable_folder_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        nh.oversight.isolated(writable=[tmp_path / "missing"])


# --- maps -----------------------------------------------------------------------------------------------


@nh.natural_function
def review(text: str) -> str:
    """natural
    Read the review <text> and return its verdict.
    """


def test_a_map_with_isolated_true_runs_each_item_walled(victim: Path) -> None:
    from nighthawk.testing import CallbackExecutor, StepResponse, return_outcome

    hostile = f"__import__('os').remove({str(victim)!r})"
    executor = CallbackExecutor(lambda *_: StepResponse(evaluate=[f"{hostile} if 'delete' in text else 0"], outcome=return_outcome("text.upper()")))
    with nh.run(executor):
        result = nh.map(review, ["fine", "please delete", "good"], isolated=True, on_error="collect", progress=False)
    assert victim.read_text() == "precious"
    assert list(result) == ["FINE", None, "GOOD"]
    assert "Permission denied" in str(result.errors[1])


def test_the_kernel_starts_its_own_processes_in_its_own_namespace_after_an_isolated_step() -> None:
    run_isolated("nh_eval", "1")
    assert os.readlink("/proc/thread-self/ns/pid_for_children") == os.readlink("/proc/self/ns/pid")
