"""Ordinary analysis code runs under `combine(read_only(writable=[scratch]), no_network())`: importing a
module is reading, and a library's own thread runs (held to the same policy) when it does nothing the
policy forbids.

Each expression runs in a fresh Python process, as in a new kernel: what a library does once per process
(loading its modules, starting its monitor thread) happens inside the step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

_PROGRAM = """
import asyncio, json, sys, threading
import numpy, tqdm
import nighthawk as nh
from scripting import call, finish, scripted_executor

@nh.natural_function
def look(data: object) -> None:
    '''natural
    Look at <data>.
    '''

policy = nh.oversight.combine(nh.oversight.read_only(writable=[sys.argv[1]]), nh.oversight.no_network())
executor, script = scripted_executor([call("nh_eval", expression=EXPRESSION)], [finish()])
with nh.run(executor), nh.scope(oversight=policy):
    look(numpy.array([[0.0], [1.0], [5.0], [6.0]]))
print(script.last_tool_results()[0])
"""


def model_reads(expression: str, tmp_path: Path) -> dict[str, Any]:
    """What the model read after `nh_eval` of `expression`, in a fresh process."""
    program = tmp_path / "program.py"  # a file: a natural function's source must be readable
    program.write_text(textwrap.dedent(_PROGRAM).replace("EXPRESSION", repr(expression)))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    tests = Path(__file__).resolve().parent.parent
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.run(
        [sys.executable, str(program), str(scratch)], env=environment, capture_output=True, text=True, timeout=300
    )
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout.strip().split("\n")[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("__import__('colorsys').rgb_to_hsv(1, 0, 0)", [0.0, 1.0, 1]),
        ("__import__('scipy.stats').stats.norm.cdf(0)", 0.5),
        ("__import__('importlib').import_module('statistics').median([3, 1, 2])", 2),
    ],
)
def test_importing_a_module_is_reading(expression: str, value: object, tmp_path: Path) -> None:
    assert model_reads(expression, tmp_path) == {"value": value, "error": None}


def test_tqdm_starts_its_monitor_thread(tmp_path: Path) -> None:
    expression = "(sum(tqdm.tqdm(range(3))), tqdm.tqdm.monitor is not None and tqdm.tqdm.monitor.is_alive())"
    assert model_reads(expression, tmp_path) == {"value": [3, True], "error": None}


def test_asyncio_run_runs(tmp_path: Path) -> None:
    assert model_reads("asyncio.run(asyncio.sleep(0, 'slept'))", tmp_path) == {"value": "slept", "error": None}


def test_kmeans_fits(tmp_path: Path) -> None:
    # `loky` asks `lscpu` for the physical cores: a process, refused (it would run outside the policy); it
    # falls back to the logical cores and says so in a warning.
    read = model_reads("__import__('sklearn.cluster').cluster.KMeans(n_clusters=2, n_init=1).fit(data).inertia_", tmp_path)
    assert (read["value"], read["error"]) == (1.0, None)
