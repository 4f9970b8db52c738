"""Isolated steps as an ordinary user sees them, run from a test session that is root.

Most notebook users are not root: their isolated steps reach the walls through a forked keeper that makes a
user and a pid namespace, not through the kernel's own thread. Run as root, this script first runs one
isolated step and one isolated map (so that every module they need is loaded from folders only root may
read), then becomes the unprivileged user `nobody`, runs each scenario as that user, and prints one JSON
object: each scenario's name and what it found (or `{"unavailable": reason}` when this machine gives an
ordinary user no namespaces).

Usage: `python tests/unprivileged_isolation.py WRITABLE VICTIM` (both already owned by `nobody`).
"""

from __future__ import annotations

import ast
import ctypes
import json
import mmap
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import nighthawk as nh
from isolated_maps import counting_forks, descendants, folders, together
from nighthawk.testing import CallbackExecutor
from scripting import call, finish, scripted_executor

NOBODY = 65534
_PR_SET_DUMPABLE = 4


@nh.natural_function
def look() -> object:
    result = None
    """natural
    Look around; set <:result>.
    """
    return result


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Return <text>, louder.
    """


def step(*calls: list[object], budget: nh.UsageBudget | None = None, **walls: object) -> dict[str, object]:
    """One isolated step of scripted calls: its result or its error, as text."""
    executor, _ = scripted_executor(*calls, **({"step_budget": budget} if budget is not None else {}))
    try:
        with nh.run(executor), nh.scope(oversight=nh.oversight.isolated(**walls)):  # type: ignore[arg-type]
            return {"result": repr(look())}
    except nh.errors.IsolationUnavailableError as exc:
        return {"unavailable": str(exc)}
    except Exception as exc:  # noqa: BLE001 - the scenario reports it
        return {"error": type(exc).__name__, "message": str(exc)}


def loud_map(tag: str, count: int) -> dict[str, object]:
    """A map whose items reach their model's code together: its results, and how many forks the kernel made.
    Each map has items of its own `tag` (a map skips the items it already ran)."""
    with counting_forks() as forks, nh.run(CallbackExecutor(together(lambda _: [], lambda _: "text.upper()", items=count))):
        results = nh.map(shout, [f"{tag} {n}" for n in range(count)], isolated=True, concurrency=count, progress=False)
    return {"results": list(results), "kernel_forks": len(forks)}


_CAPABILITIES = "{line.split(':')[0]: int(line.split()[1], 16) for line in open('/proc/self/status') if line.startswith('Cap')}"
"""What the worker holds, by set: in its user namespace it starts with every capability."""


def scenarios(writable: Path, victim: Path) -> dict[str, Callable[[], object]]:
    return {
        "euid": os.geteuid,
        "a_step_binds_and_returns": lambda: step(
            [call("nh_assign", target_path="result", expression="(__import__('os').getpid(), __import__('os').geteuid(), sum(range(10)))")],
            [finish("return", return_expression="result")],
        ),
        "exit_status": lambda: step([call("nh_eval", expression="__import__('os')._exit(3)")]),
        "crash": lambda: step([call("nh_eval", expression="__import__('ctypes').string_at(0)")]),
        "delete_outside_writable": lambda: (
            step([call("nh_eval", expression=f"__import__('os').remove({str(victim)!r})")], [finish("return", return_expression="result")]),
            victim.exists(),
        ),
        "write_in_writable": lambda: (
            step(
                [call("nh_eval", expression=f"open({str(writable / 'out.txt')!r}, 'w').write('made')")],
                [finish("return", return_expression="result")],
                writable=[writable],
            ),
            (writable / "out.txt").read_text() if (writable / "out.txt").exists() else None,
        ),
        "chmod_outside_writable": lambda: (
            step([call("nh_eval", expression=f"__import__('os').chmod({str(victim)!r}, 0o644)")], [finish("return", return_expression="result")]),
            oct(victim.stat().st_mode & 0o777),
        ),
        "capabilities": lambda: step(
            [call("nh_assign", target_path="result", expression=_CAPABILITIES)], [finish("return", return_expression="result")]
        ),
        "shared_memory": lambda: _shared_memory(victim.parent / "features.dat"),
        "budget_kills_the_tree": lambda: _budget_kills_the_tree(writable),
        "unlistable_folder_left": lambda: _unlistable_folder_left(),
        "terminal_read": lambda: _terminal_read(),
        "a_map_in_waves": lambda: _reported(lambda: loud_map("unprivileged", 8)),
    }


def _reported(scenario: Callable[[], object]) -> object:
    try:
        return scenario()
    except Exception as exc:  # noqa: BLE001 - the scenario reports it
        return {"error": type(exc).__name__, "message": str(exc)}


def _shared_memory(path: Path) -> dict[str, object]:
    """A file of the user's mapped to write, and anonymous shared memory: written in the child, left as they were
    (an ordinary user's worker opens the file again by its name, and copies the anonymous memory)."""
    path.write_bytes(b"kernel")
    with path.open("r+b") as file:
        mapped = mmap.mmap(file.fileno(), 6)
    anonymous = mmap.mmap(-1, 4096)
    anonymous[:6] = b"kernel"
    globals().update(mapped=mapped, anonymous=anonymous)
    try:
        outcome = step(
            [call("nh_assign", target_path="result", expression="(mapped.__setitem__(slice(0, 6), b'model!'), anonymous.__setitem__(slice(0, 6), b'model!'), bytes(mapped[:6]), bytes(anonymous[:6]))[2:]")],
            [finish("return", return_expression="result")],
        )
        return {"step": outcome, "kernel": [bytes(mapped[:6]).decode(), bytes(anonymous[:6]).decode()], "file": path.read_text()}
    finally:
        del globals()["mapped"], globals()["anonymous"]


def _budget_kills_the_tree(writable: Path) -> dict[str, object]:
    started = writable / "sleeper.pid"
    spawn = f"open({str(started)!r}, 'w').write(str(__import__('subprocess').Popen(['sleep', '600']).pid))"
    outcome = step(
        [call("nh_eval", expression=f"({spawn}, __import__('time').sleep(60))")],
        budget=nh.UsageBudget(wall_time_s=2.0),
        writable=[writable],
    )
    return {"step": outcome, "sleeper_started": started.exists()}


def _unlistable_folder_left() -> bool:
    """A folder the model's code made with no read permission (`mkdir(path, 0o333)`: the filter refuses `chmod`,
    not a mode at creation), holding a file: neither `rmtree` nor `rm -rf` can list it as an ordinary user."""
    shape = (
        "(os := __import__('os'), d := os.path.join(__import__('tempfile').gettempdir(), 'unlistable'), os.mkdir(d, 0o333), "
        "open(os.path.join(d, 'f'), 'w').close(), __import__('tempfile').gettempdir())[-1]"
    )
    outcome = step([call("nh_assign", target_path="result", expression=shape)], [finish("return", return_expression="result")])
    folder = ast.literal_eval(outcome["result"]) if "result" in outcome else ""
    deadline = time.monotonic() + 30
    while folder and os.path.exists(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not folder or os.path.exists(folder)


def become_nobody() -> None:
    """As root: go on as the user `nobody`, with no groups, as an ordinary user's process (also used by
    `bench/bench_isolated.py --unprivileged`)."""
    if os.geteuid() != 0:
        raise SystemExit("becoming nobody needs root; an ordinary user's steps take the unprivileged path already")
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)
    # A change of user leaves a process undumpable (its /proc files stay root's); a user's own kernel is not.
    ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)


def _terminal_read() -> dict[str, object]:
    """A terminal of the user's own with a line typed into it: the model's code tries to read the line first."""
    controlling, other = os.openpty()
    os.write(controlling, b"hunter2\n")
    try:
        read = f"open({os.ttyname(other)!r}, 'rb', buffering=0).read(100)"
        outcome = step([call("nh_assign", target_path="result", expression=read)], [finish("return", return_expression="result")])
        os.set_blocking(other, False)
        try:
            left = os.read(other, 100).decode()
        except BlockingIOError:
            left = ""
        return {"step": outcome, "left": left}
    finally:
        os.close(controlling)
        os.close(other)


def main() -> None:
    writable, victim = Path(sys.argv[1]), Path(sys.argv[2])
    # As root: load every module an isolated step and a map use, while their folders can still be read.
    step([call("nh_eval", expression="1")], [finish("return", return_expression="result")])
    loud_map("warm-up", 2)
    before, folders_before = descendants(), folders()
    become_nobody()
    os.chdir("/")
    found = {name: scenario() for name, scenario in scenarios(writable, victim).items()}
    deadline = time.monotonic() + 30
    while (descendants() - before or folders() - folders_before) and time.monotonic() < deadline:
        time.sleep(0.05)
    found["processes_left"] = len(descendants() - before)
    found["folders_left"] = sorted(folders() - folders_before)
    print(json.dumps(found, default=str))


if __name__ == "__main__":
    main()
