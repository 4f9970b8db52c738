"""Start-up figures against other commits: `import nighthawk`, `%load_ext nighthawk` in a bare shell, and
`%load_ext nighthawk` in a real ipykernel, as users start one.

Run: `PYTHONPATH=core:. python bench/bench_startup.py [COMMIT ...] [--rounds N]` (COMMIT defaults to d30c889;
give several, e.g. `d30c889 f951611`, to compare all in one run). Each commit is extracted with `git archive`
into a temporary folder; every round starts one fresh interpreter (or kernel) per tree and figure, alternating
the trees, so all see the same load. Prints medians in ms, the load average before and after, and where each
figure was measured; asserts nothing.

- `import nighthawk`: a fresh interpreter, nothing imported before.
- `%load_ext` shell cold / with core: the magic alone in a bare `InteractiveShell` (IPython imported before the
  clock starts); "with core" imports nighthawk first, as a startup file that imports it would.
- `%load_ext` in kernel: an ipykernel started with `jupyter_client` (this Python), with the startup file an
  install puts in place (it declares the magics against the extension) and ipywidgets installed: the magic
  alone, timed inside the kernel's first cell; also how many modules it imported (median).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

FIGURES = {
    "import nighthawk": (
        "import time; t = time.perf_counter(); import nighthawk; print('FIGURE', time.perf_counter() - t)"
    ),
    "%load_ext shell cold": (
        "import time\nfrom IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "t = time.perf_counter(); shell.run_line_magic('load_ext', 'nighthawk'); print('FIGURE', time.perf_counter() - t)"
    ),
    "%load_ext shell, core": (
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


KERNEL = "%load_ext in kernel"
KERNEL_CELL = (
    "import sys, time\n_before = set(sys.modules)\n_t = time.perf_counter()\n"
    "get_ipython().run_line_magic('load_ext', 'nighthawk')\n"
    "print('FIGURE', time.perf_counter() - _t, len(set(sys.modules) - _before))"
)


def kernel_run(tree: Path, ipython_dir: Path) -> tuple[float, int]:
    """`%load_ext nighthawk` timed in the first cell of a new kernel running `tree`: (ms, modules imported)."""
    from jupyter_client.manager import start_new_kernel

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree / "core"), str(tree)]),
        "PYTHONWARNINGS": "ignore",
        "IPYTHONDIR": str(ipython_dir),
    }
    printed: list[dict[str, Any]] = []
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60, env=env, cwd=str(tree))
    try:
        reply = kc.execute_interactive(KERNEL_CELL, timeout=60, output_hook=printed.append)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"the cell failed in {tree}: {reply['content']}")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    text = "".join(m["content"].get("text", "") for m in printed if m["msg_type"] == "stream")
    seconds, modules = text.split("FIGURE")[-1].split()
    return float(seconds) * 1000, int(modules)


def autoloading_ipython_dir(into: Path) -> Path:
    """An IPython directory whose default profile runs the startup file an install puts in place."""
    startup = into / "profile_default" / "startup"
    startup.mkdir(parents=True)
    shutil.copy(REPO / "jupyter-config" / "ipython" / "startup" / "50-nighthawk.py", startup)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("commits", nargs="*", default=["d30c889"])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--no-kernel", action="store_true", help="skip the kernel figure")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="nh-startup-") as folder:
        trees = {commit: extract(commit, Path(folder) / commit) for commit in args.commits}
        trees["this tree"] = compiled(REPO)
        ipython_dir = autoloading_ipython_dir(Path(folder) / "ipython")
        figures = [*FIGURES, *([] if args.no_kernel else [KERNEL])]
        times: dict[tuple[str, str], list[float]] = {(f, t): [] for f in figures for t in trees}
        modules: dict[str, list[int]] = {t: [] for t in trees}
        for _ in range(args.rounds):
            for figure in figures:
                for label, tree in trees.items():
                    if figure == KERNEL:
                        ms, count = kernel_run(tree, ipython_dir)
                        times[figure, label].append(ms)
                        modules[label].append(count)
                    else:
                        times[figure, label].append(one_run(tree, FIGURES[figure]))
    print(
        f"load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after (1 min; {os.cpu_count()} CPUs); "
        f"medians of {args.rounds} alternating fresh interpreters or kernels (ms)"
    )
    print(f"  {'':<24}" + "".join(f"{label:>12}" for label in trees) + "   ratios of this tree")
    for figure in figures:
        medians = [statistics.median(times[figure, label]) for label in trees]
        ratios = "  ".join(f"{medians[-1] / base:.2f}x {label}" for label, base in zip(trees, medians[:-1]))
        print(f"  {figure:<24}" + "".join(f"{m:12.1f}" for m in medians) + f"   {ratios}")
    if not args.no_kernel:
        counts = "".join(f"{statistics.median(modules[label]):12.0f}" for label in trees)
        print(f"  {'  modules it imported':<24}" + counts)
        from importlib.metadata import version

        print(
            f"measured in: a bare IPython {version('ipython')} InteractiveShell, and ipykernel {version('ipykernel')} "
            f"kernels (jupyter_client {version('jupyter_client')}, ipywidgets {version('ipywidgets')}, the startup file "
            f"of jupyter-config/ in IPYTHONDIR), Python {sys.version.split()[0]}"
        )


if __name__ == "__main__":
    main()
