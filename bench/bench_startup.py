"""Start-up figures against another commit: `import nighthawk`, `%load_ext nighthawk` cold and with the core imported.

Run: `PYTHONPATH=core:. python bench/bench_startup.py [COMMIT] [--rounds N]` (COMMIT defaults to d30c889).
The commit is extracted with `git archive` into a temporary folder; every round starts one fresh interpreter
per tree and figure, alternating the trees, so both see the same load. Prints medians in ms; asserts nothing.
The `%load_ext` figures time the magic alone in an `InteractiveShell` (IPython is imported before the clock
starts, as in a kernel); "with core" imports nighthawk first, as a startup file that imports it would.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FIGURES = {
    "import nighthawk": (
        "import time; t = time.perf_counter(); import nighthawk; print('FIGURE', time.perf_counter() - t)"
    ),
    "%load_ext cold": (
        "import time\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "t = time.perf_counter(); shell.run_line_magic('load_ext', 'nighthawk'); print('FIGURE', time.perf_counter() - t)"
    ),
    "%load_ext with core": (
        "import time, nighthawk\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "t = time.perf_counter(); shell.run_line_magic('load_ext', 'nighthawk'); print('FIGURE', time.perf_counter() - t)"
    ),
}


def extract(commit: str, into: Path) -> Path:
    """The tree of `commit` as files under `into` (what `git archive` gives, no history), byte-compiled."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return compiled(into)


def compiled(tree: Path) -> Path:
    """`tree` with its bytecode written, as an installed package has it. Without this, a tree whose caches an
    earlier run left (this checkout) races one that compiles on every import (a fresh archive, when
    PYTHONDONTWRITEBYTECODE is set): that alone made the archive 40% slower to import."""
    for folder in ("core", "nighthawk_ipython"):
        if (tree / folder).is_dir():
            compileall.compile_dir(tree / folder, quiet=1)
    return tree


def one_run(tree: Path, code: str) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "core"), str(tree)]), "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=tree)
    return float(out.stdout.split("FIGURE")[-1]) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("commit", nargs="?", default="d30c889")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nh-startup-") as folder:
        trees = {args.commit: extract(args.commit, Path(folder) / "base"), "this tree": compiled(REPO)}
        times: dict[tuple[str, str], list[float]] = {(f, t): [] for f in FIGURES for t in trees}
        for _ in range(args.rounds):
            for figure, code in FIGURES.items():
                for label, tree in trees.items():
                    times[figure, label].append(one_run(tree, code))
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.rounds} alternating fresh interpreters (ms)")
    for figure in FIGURES:
        base, here = (statistics.median(times[figure, label]) for label in trees)
        print(f"  {figure:<22} {args.commit}: {base:6.1f}   this tree: {here:6.1f}   ratio {here / base:.2f}")


if __name__ == "__main__":
    main()
