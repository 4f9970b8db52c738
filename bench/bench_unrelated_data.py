"""Own overhead of a Natural block whose module also holds big data the block never reads.

Run: `PYTHONPATH=core python bench/bench_unrelated_data.py`. The same block is defined in several modules:
one with nothing else, one that also holds a 1,000,000-item list, a 1,000,000-key dict and a 10,000-deep
chain of objects, one with 5,000 globals (a long-lived notebook namespace), and (with pandas) one whose
block reads a 100,000-row table with a `password` column (its leading 256 passwords are looked at, its
other columns never). Finding a step's secrets reads the names of the globals, never what the others hold,
so the first three rows should show about the same own overhead (the time beyond a bare pydantic-ai agent
doing the same rounds, see `bench_overhead.py`); the table row also pays for rendering the table.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import random
import string
import sys
import tempfile
import types
from functools import partial
from pathlib import Path

from bench_overhead import bare_agent, one_round, paired_ms, scripted, tool_round

import nighthawk as nh

BLOCK = '''
import nighthawk as nh

@nh.natural_function
def block(x: int) -> int:
    result = 0
    """natural
    Set <:result> to <x> plus one.
    """
    return result
'''


# The same block, also handed a table it reads.
TABLE_BLOCK = BLOCK.replace("def block(x: int)", "def block(users, x: int)").replace(
    "plus one.", "plus one; <users> is there too."
)


class Node:
    def __init__(self, child: Node | None) -> None:
        self.child = child
        self.label = "a node of a long chain"


def module(name: str, folder: Path, source: str = BLOCK, **extra: object) -> types.ModuleType:
    """A module from a file (the decorator reads the block's source), holding `extra` as globals too."""
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    made = importlib.util.module_from_spec(spec)
    sys.modules[name] = made
    spec.loader.exec_module(made)
    made.__dict__.update(extra)
    return made


def unrelated_data() -> dict[str, object]:
    chain = None
    for _ in range(10_000):
        chain = Node(chain)
    return {
        "rows": [{"id": i, "name": f"row {i}"} for i in range(1_000_000)],
        "index": {f"key-{i}": i for i in range(1_000_000)},
        "chain": chain,
    }


def password_table() -> object:
    """A 100,000-row DataFrame with a `password` column, or `None` without pandas."""
    try:
        import pandas as pd
    except ImportError:
        return None
    n = 100_000
    rng = random.Random(0)
    alphabet = string.ascii_letters + string.digits + "!#%&*"
    passwords = ["".join(rng.choices(alphabet, k=12)) for _ in range(n)]
    return pd.DataFrame({"user": [f"user_{i}" for i in range(n)], "password": passwords, "score": range(n)})


def measure(script, label: str, block) -> float:
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=scripted(script)))
    agent = bare_agent(script)
    loop = asyncio.new_event_loop()
    with nh.run(executor):
        bare, ours, overhead = paired_ms(lambda: loop.run_until_complete(agent.run("user prompt")), lambda: block(1))
    print(f"{label:<60} bare agent {bare:6.2f} ms   natural block {ours:6.2f} ms   own overhead {overhead:5.2f} ms")
    return overhead


if __name__ == "__main__":
    folder = Path(tempfile.mkdtemp(prefix="nighthawk-bench-"))
    plain = module("plain_module", folder)
    loaded = module("loaded_module", folder, **unrelated_data())
    crowded = module("crowded_module", folder, **{f"result_{i}": [i] for i in range(5_000)})
    tabled = module("table_module", folder, TABLE_BLOCK)
    users = password_table()
    gc.collect()  # the collection that building the data made due is not charged to the first row
    for script, rounds in ((one_round, "one round"), (tool_round, "one tool round, then finish")):
        measure(script, f"{rounds}, module without unrelated data", plain.block)
        measure(script, f"{rounds}, module with unrelated data", loaded.block)
        measure(script, f"{rounds}, module with 5,000 globals", crowded.block)
        if users is not None:
            measure(script, f"{rounds}, block reads a 10^5-row table with a password column", partial(tabled.block, users))
