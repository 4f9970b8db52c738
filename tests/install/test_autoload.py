"""`pip install` puts the startup file in place, and every new kernel of that environment knows the magics.

Each test builds on a fresh virtual environment with the project installed by pip, the way a user installs
it, and talks to new kernels of that environment through `jupyter_client`. The startup file only declares
the magics: `nighthawk` must not be imported until the first one is used.

By default the environment borrows the dependencies of the environment running the tests (a `.pth` file)
and pip installs the project itself with `--no-deps`, which takes a few seconds. Set
`NIGHTHAWK_INSTALL_TEST_FULL=1` to install the dependencies into it too (about 40 s per environment). Both
need the package index (or pip's cache) for the build backend, as any `pip install .` does.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.kernel_client import execute

pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

pytestmark = pytest.mark.install

REPO = Path(__file__).resolve().parents[2]
STARTUP_SOURCE = REPO / "jupyter-config" / "ipython" / "startup" / "50-nighthawk.py"
KERNEL_NAME = "nighthawk-fresh-venv"
FULL_INSTALL = os.environ.get("NIGHTHAWK_INSTALL_TEST_FULL") == "1"

SCRIPT_CELL = '''
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

def script(messages, info):
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("nh_assign", {"target_path": "total", "expression": "sum(values)"})])
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "total * 2"})])

scripted = FunctionModel(script, model_name="scripted")
values = [1, 2, 3]
'''
NATURAL_BODY = "Sum <values> into <:total>, then return it doubled."
LISTED = "(lambda table: ('natural' in table['cell'], 'nighthawk' in table['line']))(get_ipython().magics_manager.magics)"
DECLARED = "{name: spec for name, spec in get_ipython().magics_manager.lazy_magics.items() if 'nighthawk' in spec}"
LOADED = "sorted(name for name in __import__('sys').modules if name.split('.')[0] in ('nighthawk', 'nighthawk_ipython'))"


@dataclass
class Venv:
    """A fresh virtual environment with the project pip-installed, plus its own IPython dir and kernelspec."""

    root: Path
    ipython_dir: Path
    kernels: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def startup_file(self) -> Path:
        return self.root / "etc" / "ipython" / "startup" / STARTUP_SOURCE.name

    def pip(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run pip against this environment (the test environment's pip with `--python`, unless full)."""
        pip = [str(self.python), "-m", "pip"] if FULL_INSTALL else [sys.executable, "-m", "pip", "--python", str(self.python)]
        result = subprocess.run([*pip, "--quiet", *args], check=False, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"pip {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result


def make_venv(root: Path) -> Venv:
    """Create a virtual environment in `root` and `pip install` the checkout into it."""
    # Without pip of its own unless full: the test environment's pip installs into it (`pip --python`).
    without_pip = [] if FULL_INSTALL else ["--without-pip"]
    subprocess.run([sys.executable, "-m", "venv", *without_pip, str(root)], check=True, timeout=120)
    venv = Venv(root=root, ipython_dir=root.parent / f"{root.name}-ipython", kernels=root.parent / f"{root.name}-kernels")
    if not FULL_INSTALL:
        # Borrow the test environment's dependencies. The folder is appended after this environment's own
        # site-packages (and its .pth files are not processed), so a nighthawk installed there cannot
        # shadow the one pip installs here; the tests check where `nighthawk` was imported from.
        purelib = subprocess.run(
            [str(venv.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True, timeout=60,
        ).stdout.strip()
        borrowed = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
        (Path(purelib) / "_nighthawk_test_deps.pth").write_text("".join(f"{path}\n" for path in borrowed))
        venv.pip("install", "--no-deps", str(REPO))
    else:
        venv.pip("install", str(REPO))
    spec = venv.kernels / KERNEL_NAME
    spec.mkdir(parents=True)
    argv = [str(venv.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "fresh venv", "language": "python"}))
    return venv


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Venv:
    started = time.perf_counter()
    made = make_venv(tmp_path_factory.mktemp("install") / "venv")
    _report(pytestconfig, f"fresh venv + pip install ({'full' if FULL_INSTALL else '--no-deps'}): {time.perf_counter() - started:.1f} s")
    return made


def _report(config: pytest.Config, line: str) -> None:
    """Write a figure to the test log (not an assertion), even while pytest captures output."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(f"\n[install] {line}")


def kernel_env(venv: Venv, **extra: str) -> dict[str, str]:
    """The environment of a kernel of `venv`: no checkout on the path, no user IPython profile, offline."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "VIRTUAL_ENV", "NIGHTHAWK_NO_AUTOLOAD")
    }
    env["IPYTHONDIR"] = str(venv.ipython_dir)
    env.update(extra)
    return env


@contextmanager
def kernel(venv: Venv, **extra_env: str) -> Iterator[tuple[Any, float]]:
    """A new kernel of `venv`; yields its client and the seconds from launch to the first kernel_info reply."""
    km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(venv.kernels)]))
    started = time.perf_counter()
    km.start_kernel(env=kernel_env(venv, **extra_env))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        yield kc, time.perf_counter() - started
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(kc: Any, code: str) -> str | None:
    """Run `code`, fail on any error, and return the `text/plain` of its result (if any)."""
    messages, reply = execute(kc, code)
    errors = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert reply["content"]["status"] == "ok" and not errors, "\n".join(
        "\n".join(error["traceback"]) for error in errors
    ) or reply["content"]
    results = [m["content"]["data"]["text/plain"] for m in messages if m["msg_type"] == "execute_result"]
    return results[-1] if results else None


def error_of(kc: Any, code: str) -> tuple[str, str]:
    """Run `code`, which must fail; return the exception's name and message."""
    _, reply = execute(kc, code)
    assert reply["content"]["status"] == "error", f"{code!r} did not fail"
    return reply["content"]["ename"], reply["content"]["evalue"]


def test_pip_install_puts_the_startup_file_under_the_environment_prefix(venv: Venv) -> None:
    assert venv.startup_file.read_text() == STARTUP_SOURCE.read_text()


def test_new_kernel_declares_the_magics_without_importing_nighthawk(venv: Venv) -> None:
    with kernel(venv) as (kc, _):
        assert run(kc, LOADED) == "[]"
        # Listed for %lsmagic and completion, declared against the extension it loads on first use.
        assert run(kc, LISTED) == "(True, True)"
        assert run(kc, DECLARED) == "{'natural': 'nighthawk', 'nighthawk': 'nighthawk'}"
        # The startup file leaves nothing behind in the user namespace.
        assert run(kc, "[name for name in dir() if 'nighthawk' in name]") == "[]"
        run(kc, SCRIPT_CELL)
        assert run(kc, LOADED) == "[]"


def test_new_kernel_runs_a_natural_cell_without_load_ext(venv: Venv) -> None:
    with kernel(venv) as (kc, _):
        run(kc, SCRIPT_CELL)
        run(kc, "%nighthawk model scripted")
        assert run(kc, f"%%natural\n{NATURAL_BODY}") == "12"
        assert run(kc, "total") == "6"
        # The installed copy answered, not a checkout on some path.
        location = run(kc, "__import__('nighthawk').__file__")
        assert location is not None and location.strip("'").startswith(str(venv.root))


def test_natural_cell_as_the_first_magic_loads_the_extension(venv: Venv) -> None:
    with kernel(venv) as (kc, _):
        run(kc, SCRIPT_CELL)
        assert run(kc, LOADED) == "[]"
        assert run(kc, f"%%natural -m scripted\n{NATURAL_BODY}") == "12"
        assert "'nighthawk'" in (run(kc, LOADED) or "")


def test_opt_out_leaves_the_magics_unknown_until_load_ext(venv: Venv) -> None:
    with kernel(venv, NIGHTHAWK_NO_AUTOLOAD="1") as (kc, _):
        run(kc, SCRIPT_CELL)
        assert error_of(kc, f"%%natural -m scripted\n{NATURAL_BODY}") == ("UsageError", "Cell magic `%%natural` not found.")
        assert run(kc, LOADED) == "[]"
        run(kc, "%load_ext nighthawk")
        assert run(kc, f"%%natural -m scripted\n{NATURAL_BODY}") == "12"


def test_startup_file_adds_no_imports_to_kernel_start(venv: Venv, pytestconfig: pytest.Config) -> None:
    """The modules a new kernel has loaded are the same with and without the file; start times are reported."""
    aside = venv.startup_file.with_suffix(".off")
    modules = "sorted(__import__('sys').modules)"
    with kernel(venv):  # warm-up: the first start creates the IPython profile
        pass
    with_file: list[float] = []
    without_file: list[float] = []
    try:
        for _ in range(3):  # interleaved, so machine noise hits both sides alike
            with kernel(venv) as (kc, seconds):
                with_file.append(seconds)
                modules_with = run(kc, modules)
            venv.startup_file.rename(aside)
            try:
                with kernel(venv) as (kc, seconds):
                    without_file.append(seconds)
                    modules_without = run(kc, modules)
            finally:
                aside.rename(venv.startup_file)
            assert modules_with == modules_without
        with kernel(venv) as (kc, _):
            cost = run(
                kc,
                f"import time as _t; _c = compile(open({str(venv.startup_file)!r}).read(), 'startup', 'exec'); "
                "_s = _t.perf_counter(); exec(_c, {}); round((_t.perf_counter() - _s) * 1e6)",
            )
    finally:
        if aside.exists():
            aside.rename(venv.startup_file)
    _report(
        pytestconfig,
        "kernel start, median of 3: "
        f"with startup file {statistics.median(with_file):.3f} s {[round(s, 3) for s in with_file]}, "
        f"without {statistics.median(without_file):.3f} s {[round(s, 3) for s in without_file]}; "
        f"executing the startup file's code in a running kernel: {cost} µs"
    )


def test_pip_uninstall_removes_the_startup_file(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    assert venv.startup_file.exists()
    venv.pip("uninstall", "--yes", "nighthawk-jupyter")
    assert not venv.startup_file.exists()
    startup_dir = venv.startup_file.parent
    leftovers = [path.name for path in startup_dir.rglob("*")] if startup_dir.exists() else []
    assert not [name for name in leftovers if "nighthawk" in name], leftovers
    with kernel(venv) as (kc, _):
        assert error_of(kc, "%%natural\nanything") == ("UsageError", "Cell magic `%%natural` not found.")
