"""A real browser: step displays in a live JupyterLab (one step, its "As Python" section, a loop of 50), and
static exports offline.

JupyterLab runs on 127.0.0.1 with a random token and a temporary root folder; Debian's chromium is driven
headless by Python playwright (`executable_path`, no browser download). Every request the pages make to
anything but the loopback server (or, for the export, the file itself) is aborted, so a page that needs
the network shows it here instead of hanging. Screenshots go to `build/screenshots/`.

Needs `chromium` on the PATH, and `playwright`, `jupyterlab` and `nbconvert` importable. Without them the
module is skipped, unless `NIGHTHAWK_REQUIRE_BROWSER=1`, when it fails instead (CI sets it).
"""

from __future__ import annotations

import importlib.util
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "build" / "screenshots"
NOTEBOOKS = REPO / "notebooks"
QUICKSTART = "01-quickstart.ipynb"
STARTUP_FILE = REPO / "jupyter-config" / "ipython" / "startup" / "50-nighthawk.py"
CHROMIUM = shutil.which("chromium")
# Without the background-networking flags Chromium keeps opening connections the closed network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 60_000


def _missing() -> list[str]:
    missing = [] if CHROMIUM else ["chromium on the PATH (apt-get install -y chromium)"]
    for module, package in (("playwright", "playwright"), ("jupyterlab", "jupyterlab"), ("nbconvert", "nbconvert")):
        if importlib.util.find_spec(module) is None:
            missing.append(f"{module} (pip install {package})")
    return missing


if _missing():
    _reason = "the real-browser check needs " + ", ".join(_missing())
    if os.environ.get("NIGHTHAWK_REQUIRE_BROWSER") == "1":
        pytest.fail(_reason, pytrace=False)
    pytest.skip(_reason, allow_module_level=True)

import nbformat  # noqa: E402
from playwright.sync_api import Browser, Page, Route, sync_playwright  # noqa: E402

pytestmark = pytest.mark.browser

NOTEBOOK = "nighthawk-step-widget.ipynb"
SETUP_CELL = '''\
%load_ext nighthawk
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

ROUNDS = [
    [ToolCallPart("nh_eval", {"expression": "sum(orders)"})],
    [
        ToolCallPart("nh_assign", {"target_path": "big_orders", "expression": "[o for o in orders if o > threshold]"}),
        ToolCallPart("nh_assign", {"target_path": "threshold", "expression": "sum(orders) // len(orders)"}),
    ],
    [ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "len(big_orders)"})],
]

def script(messages, info):
    requests = sum(1 for message in messages if message.kind == "request")
    return ModelResponse(parts=ROUNDS[min(requests, len(ROUNDS)) - 1])

script_model = FunctionModel(script, model_name="scripted")
%nighthawk model script_model'''
CELLS = [
    SETUP_CELL,
    "orders = [120, 80, 45, 310]\nthreshold = 100",
    (
        "%%natural\nKeep the <orders> above <threshold> in <:big_orders>, set <:threshold> to the mean order,\n"
        "and return how many orders are big."
    ),
    "big_orders, threshold",
]
# What the step display must say, live and static: header, tool calls, locals diff, outcome.
HEADER_FACTS = ["Natural step In[3]:2", "completed", "scripted", "Keep the <orders> above <threshold>"]
TOOL_FACTS = ["nh_eval", "sum(orders)", "555", "nh_assign", "big_orders", "[o for o in orders if o > threshold]"]
LOCALS_FACTS = ["big_orders", "[120,310]", "threshold", "100", "138", "committed"]
OUTCOME_FACTS = ["return len(big_orders) -> 2"]

AS_PYTHON_NOTEBOOK = "nighthawk-as-python.ipynb"
AS_PYTHON_CELLS = [*CELLS, "%nighthawk code"]
# The code the step ran: its calls in the order they started (the two assignments came in one response), then
# the returned expression as the cell's last one.
AS_PYTHON = (
    "sum(orders)\n"
    "big_orders = [o for o in orders if o > threshold]\n"
    "threshold = sum(orders) // len(orders)\n"
    "len(big_orders)\n"
)


LOOP_NOTEBOOK = "nighthawk-step-loop.ipynb"
# A natural function called 50 times from one cell, each step taking a moment (10 s in all) so the live view can
# be seen even when the browser is slow to render it.
LOOP_CELLS = [
    '''\
%load_ext nighthawk
import time
import nighthawk
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

def label(messages, info):
    time.sleep(0.2)
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "'bug' if 'crash' in text else 'idea'"})])

labeller = FunctionModel(label, model_name="labeller")
%nighthawk model labeller

@nighthawk.natural_function
def classify(text: str) -> str:
    """natural
    Return the label of <text>: bug or idea.
    """''',
    "texts = [f'crash report {n}' if n % 3 else f'feature idea {n}' for n in range(50)]\nlabels = [classify(text) for text in texts]",
    "labels.count('bug'), labels.count('idea')",
]


def _notebook(cells: list[str]) -> Any:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    return notebook


def _alignments(page: Page, selector: str) -> set[str]:
    """The computed `text-align` of every element matching `selector`."""
    return set(page.locator(selector).evaluate_all("cells => cells.map(cell => getComputedStyle(cell).textAlign)"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _jupyter_env(home: Path) -> dict[str, str]:
    """Environment for the server, its kernels and nbconvert: offline, no user config, the checkout importable."""
    env = dict(os.environ)
    # Installed or from a checkout: the repo's packages come first (as in tests/kernel), as absolute paths
    # because kernels start in the notebook's folder.
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "core"), str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    for name in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR",
                 "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR"):
        env[name] = str(home / name.lower())
    # No "get notified about Jupyter news?" toast over the outputs in the screenshots.
    notification = home / "jupyterlab_settings_dir" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True, exist_ok=True)
    (notification / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    # The magics in every kernel even from a checkout: the startup file an install puts under the prefix.
    startup = home / "ipythondir" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    shutil.copy(STARTUP_FILE, startup / STARTUP_FILE.name)
    return env


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    env: dict[str, str]

    def notebook_url(self, path: str) -> str:
        # A workspace of its own, reset: Lab does not reopen the tabs an earlier test left behind.
        workspace = re.sub(r"[^A-Za-z0-9]+", "-", path)
        return f"{self.url}/lab/workspaces/{workspace}/tree/{path}?reset&token={self.token}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    home = tmp_path_factory.mktemp("lab")
    root = home / "root"
    root.mkdir()
    nbformat.write(_notebook(CELLS), root / NOTEBOOK)
    nbformat.write(_notebook(LOOP_CELLS), root / LOOP_NOTEBOOK)
    nbformat.write(_notebook(AS_PYTHON_CELLS), root / AS_PYTHON_NOTEBOOK)
    if (NOTEBOOKS / QUICKSTART).exists():
        # The example notebooks with everything beside them (replay stores).
        shutil.copytree(NOTEBOOKS, root / "notebooks")
    env = _jupyter_env(home)
    port, token = _free_port(), secrets.token_hex(16)
    log = (home / "jupyterlab.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyterlab",
            "--allow-root", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True",
            f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(server, f"{url}/api/status?token={token}", home / "jupyterlab.log")
        yield Lab(url=url, token=token, root=root, env=env)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)
        log.close()


def _wait_for_server(server: subprocess.Popen[bytes], status_url: str, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(status_url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass  # not listening yet
        time.sleep(0.2)
    raise TimeoutError(f"JupyterLab did not answer within {timeout} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        # Playwright gives every launch a new, empty temporary profile (its own --user-data-dir).
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=WAIT_MS)
        try:
            yield chromium
        finally:
            chromium.close()


@contextmanager
def _offline_page(browser: Browser, allowed: re.Pattern[str], name: str) -> Iterator[Page]:
    """A page whose requests to anything not matching `allowed` are aborted.

    When the test fails, the page is saved as `build/screenshots/failed-<name>.png` and `.txt` for the log.
    """
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(WAIT_MS)

    def route(route: Route) -> None:
        if allowed.match(route.request.url):
            route.continue_()
        else:
            route.abort()

    page.route("**/*", route)
    try:
        yield page
    except BaseException:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=str(SCREENSHOTS / f"failed-{name}.png"), full_page=True, timeout=10_000)
            (SCREENSHOTS / f"failed-{name}.txt").write_text(page.locator("body").inner_text(timeout=10_000))
        except Exception:  # the page itself may be what broke; keep the original error
            pass
        raise
    finally:
        page.close()


def _loopback(lab: Lab) -> re.Pattern[str]:
    return re.compile(re.escape(lab.url) + r"(/|$)")


def _open_and_run_all(page: Page, lab: Lab, path: str) -> None:
    page.goto(lab.notebook_url(path), wait_until="domcontentloaded")
    # The notebook is the current widget and its kernel is up: only then does run-all reach it.
    page.wait_for_function(
        """path => {
            const current = window.jupyterapp?.shell?.currentWidget;
            return current?.context?.path === path && current.sessionContext?.session?.kernel?.status === 'idle';
        }""",
        arg=path,
    )
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


# The error outputs of the current notebook, as "ename: evalue", read from Lab's notebook model.
_ERROR_OUTPUTS = """() => {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
    const errors = [];
    for (let i = 0; i < cells.length; i++) {
        const outputs = cells.get(i).outputs;
        for (let j = 0; outputs && j < outputs.length; j++) {
            const output = outputs.get(j).toJSON();
            if (output.output_type === 'error') errors.push(`${output.ename}: ${output.evalue}`);
        }
    }
    return errors;
}"""


def _text(page: Page, selector: str) -> str:
    return page.locator(selector).inner_text()


def _assert_facts(text: str, facts: list[str], where: str) -> None:
    missing = [fact for fact in facts if fact not in text]
    assert not missing, f"{where} does not show {missing}; it shows:\n{text}"


def test_finished_step_is_shown_as_static_html_in_jupyterlab(lab: Lab, browser: Browser) -> None:
    with _offline_page(browser, _loopback(lab), "jupyterlab-step") as page:
        _open_and_run_all(page, lab, NOTEBOOK)
        step = ".jp-RenderedHTMLCommon > .nh-step"
        page.locator(f"{step} .nh-status", has_text="completed").wait_for()
        # The value cell after the step ran too: the whole notebook went through.
        page.get_by_text("([120, 310], 138)").wait_for()
        assert page.locator(step).count() == 1
        assert page.evaluate(_ERROR_OUTPUTS) == []
        assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
        # The live widget is retired when the cell ends: nothing of it is left on screen.
        assert not page.locator(".nh-step-widget").is_visible()

        _assert_facts(_text(page, f"{step} .nh-header") + _text(page, f"{step} .nh-program"), HEADER_FACTS, "the header")
        _assert_facts(_text(page, f"{step} .nh-outcome"), OUTCOME_FACTS, "the outcome")
        _assert_facts(_text(page, f"{step} table.nh-tools"), TOOL_FACTS, "the tool calls")
        _assert_facts(_text(page, f"{step} table.nh-locals"), LOCALS_FACTS, "the step-locals diff")
        assert _alignments(page, f"{step} table td") == {"left"}
        prompt = page.locator(f"{step} .nh-prompt")
        assert not prompt.is_visible()
        page.locator(f"{step} summary", has_text="Prompt").click()
        prompt.wait_for(state="visible")

        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(step).scroll_into_view_if_needed()
        page.locator(".jp-CodeCell", has=page.locator(step)).screenshot(path=str(SCREENSHOTS / "jupyterlab-step-cell.png"))


# The sources of the current notebook's cells, read from Lab's notebook model.
_CELL_SOURCES = """() => {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
    const sources = [];
    for (let i = 0; i < cells.length; i++) sources.push(cells.get(i).sharedModel.getSource());
    return sources;
}"""


def test_as_python_section_unfolds_to_code_one_click_selects_in_jupyterlab(lab: Lab, browser: Browser) -> None:
    with _offline_page(browser, _loopback(lab), "jupyterlab-as-python") as page:
        _open_and_run_all(page, lab, AS_PYTHON_NOTEBOOK)
        step = ".jp-RenderedHTMLCommon > .nh-step"
        page.locator(f"{step} .nh-status", has_text="completed").wait_for()
        page.get_by_text("([120, 310], 138)").wait_for()
        section = page.locator(f"{step} details.nh-python")
        code = section.locator("pre")
        assert not code.is_visible()  # folded until asked for
        section.locator("summary", has_text="As Python").click()
        code.wait_for(state="visible")
        assert code.inner_text().rstrip("\n") == AS_PYTHON.rstrip("\n")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        section.scroll_into_view_if_needed()
        section.screenshot(path=str(SCREENSHOTS / "jupyterlab-as-python.png"))
        code.click()  # one click selects the whole code, ready for Ctrl+C
        assert page.evaluate("() => window.getSelection().toString()").rstrip("\n") == AS_PYTHON.rstrip("\n")
        section.screenshot(path=str(SCREENSHOTS / "jupyterlab-as-python-selected.png"))
        # `%nighthawk code` (the last cell) added a cell below it holding the same code, and replaced nothing.
        page.wait_for_function(f"() => ({_CELL_SOURCES})().length === {len(AS_PYTHON_CELLS) + 1}")
        sources = page.evaluate(_CELL_SOURCES)
        assert sources[: len(AS_PYTHON_CELLS)] == AS_PYTHON_CELLS
        assert sources[-1].rstrip("\n") == AS_PYTHON.rstrip("\n")
        assert page.evaluate(_ERROR_OUTPUTS) == []


def test_loop_of_fifty_steps_is_live_then_one_static_display_in_jupyterlab(lab: Lab, browser: Browser) -> None:
    with _offline_page(browser, _loopback(lab), "jupyterlab-loop") as page:
        _open_and_run_all(page, lab, LOOP_NOTEBOOK)
        live = page.locator(".nh-step-widget")
        # Waiting for the pattern (not reading the text after a wait) leaves no gap for the next step to land in.
        live.locator(".nh-counts", has_text=re.compile(r"\d+ steps · \d+ completed · 1 running")).wait_for()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(".jp-CodeCell", has=live).screenshot(path=str(SCREENSHOTS / "jupyterlab-loop-live.png"))

        done = page.locator(".jp-RenderedHTMLCommon > .nh-cell")
        done.locator(".nh-counts", has_text="50 steps · 50 completed").wait_for()
        page.get_by_text("(33, 17)").wait_for()  # the cell after the loop ran too
        assert page.evaluate(_ERROR_OUTPUTS) == []
        assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
        assert not live.is_visible()
        assert done.count() == 1
        # Each shown step opens from its one-line summary; the others are counted.
        assert done.locator("summary", has_text=re.compile(r"^#\d+ ")).count() == 5
        _assert_facts(done.inner_text(), ["45 more steps not shown (45 completed)", "Return the label of <text>"], "the summary")
        first = done.locator("details.nh-step").first
        outcome = first.locator(".nh-outcome")
        assert not outcome.is_visible()
        first.locator("summary", has_text="#1 ").click()
        outcome.wait_for(state="visible")
        _assert_facts(outcome.inner_text(), ["return 'bug' if 'crash' in text else 'idea' -> \"idea\""], "step #1")
        page.locator(".jp-CodeCell", has=done).screenshot(path=str(SCREENSHOTS / "jupyterlab-loop-done.png"))


def test_saved_loop_notebook_renders_after_a_reload_in_jupyterlab(lab: Lab, browser: Browser) -> None:
    with _offline_page(browser, _loopback(lab), "jupyterlab-loop-reload") as page:
        _open_and_run_all(page, lab, LOOP_NOTEBOOK)
        done = page.locator(".jp-RenderedHTMLCommon > .nh-cell")
        done.locator(".nh-counts", has_text="50 steps · 50 completed").wait_for()
        page.get_by_text("(33, 17)").wait_for()
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
        # Reopened in a new page, the kernel that made the widget is of no help: the saved outputs must do.
        page.reload(wait_until="domcontentloaded")
        page.wait_for_function(
            "path => window.jupyterapp?.shell?.currentWidget?.context?.path === path", arg=LOOP_NOTEBOOK
        )
        done.locator(".nh-counts", has_text="50 steps · 50 completed").wait_for()
        # The retired live view says "Loading widget..." until the widget manager has looked at it and hid it.
        page.wait_for_function("() => !document.querySelector('.jp-Notebook').innerText.includes('Loading widget')")
        notebook_text = page.locator(".jp-Notebook").inner_text()
        assert "Error displaying widget" not in notebook_text and "Loading widget" not in notebook_text
        assert done.count() == 1
        assert _alignments(page, ".jp-RenderedHTMLCommon > .nh-cell table td") == {"left"}
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(".jp-CodeCell", has=done).screenshot(path=str(SCREENSHOTS / "jupyterlab-loop-reloaded.png"))


@pytest.mark.skipif(not (NOTEBOOKS / QUICKSTART).exists(), reason=f"notebooks/{QUICKSTART} is not there yet")
def test_quickstart_runs_and_shows_its_steps_in_jupyterlab(lab: Lab, browser: Browser) -> None:
    source = nbformat.read(NOTEBOOKS / QUICKSTART, as_version=4)
    steps = sum(1 for cell in source.cells if cell.cell_type == "code" and cell.source.startswith("%%natural"))
    with _offline_page(browser, _loopback(lab), "jupyterlab-quickstart") as page:
        _open_and_run_all(page, lab, f"notebooks/{QUICKSTART}")
        completed = page.locator(".jp-RenderedHTMLCommon > .nh-step .nh-status", has_text="completed")
        deadline = time.monotonic() + WAIT_MS / 1000
        while completed.count() < steps and time.monotonic() < deadline:
            errors = page.evaluate(_ERROR_OUTPUTS)
            assert not errors, f"the quickstart failed in JupyterLab: {errors}"
            page.wait_for_timeout(200)
        assert completed.count() == steps, f"{completed.count()} of {steps} steps completed"
        assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        completed.first.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / "jupyterlab-quickstart.png"))


def _export(lab: Lab, tmp_path: Path, notebook: Any, name: str) -> Path:
    """Execute and export `notebook` with `jupyter nbconvert --to html --execute` and its default options."""
    path = tmp_path / name
    nbformat.write(notebook, path)
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--execute", f"--output-dir={tmp_path / 'html'}", str(path)],
        env=lab.env, cwd=tmp_path, check=True, capture_output=True, timeout=180,
    )
    return tmp_path / "html" / name.replace(".ipynb", ".html")


def test_static_export_shows_the_step_offline(lab: Lab, browser: Browser, tmp_path: Path) -> None:
    exported = _export(lab, tmp_path, _notebook(CELLS), NOTEBOOK)
    with _offline_page(browser, re.compile(re.escape(exported.as_uri()) + "$"), "static-export") as page:
        page.goto(exported.as_uri(), wait_until="load")
        step = page.locator(".nh-step")
        assert step.count() == 1
        assert step.is_visible()
        _assert_facts(_text(page, ".nh-step .nh-header") + _text(page, ".nh-step .nh-program"), HEADER_FACTS, "the header")
        _assert_facts(_text(page, ".nh-step .nh-outcome"), OUTCOME_FACTS, "the outcome")
        _assert_facts(_text(page, ".nh-step table.nh-tools"), TOOL_FACTS, "the tool calls")
        _assert_facts(_text(page, ".nh-step table.nh-locals"), LOCALS_FACTS, "the step-locals diff")
        assert _alignments(page, ".nh-step table td") == {"left"}
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        step.screenshot(path=str(SCREENSHOTS / "static-export.png"))
        # The prompt is the collapsed section of the static form; its summary opens it.
        prompt = page.locator(".nh-step .nh-prompt")
        assert not prompt.is_visible()
        page.locator(".nh-step summary", has_text="Prompt").click()
        prompt.wait_for(state="visible")
        _assert_facts(prompt.inner_text(), ["Keep the <orders> above <threshold>", "orders"], "the prompt")


def test_static_export_of_a_fifty_step_loop_shows_one_summary_offline(lab: Lab, browser: Browser, tmp_path: Path) -> None:
    exported = _export(lab, tmp_path, _notebook(LOOP_CELLS), LOOP_NOTEBOOK)
    with _offline_page(browser, re.compile(re.escape(exported.as_uri()) + "$"), "static-export-loop") as page:
        page.goto(exported.as_uri(), wait_until="load")
        cell = page.locator(".nh-cell")
        assert cell.count() == 1 and cell.is_visible()
        _assert_facts(cell.locator(".nh-summary").inner_text(), ["Natural steps", "50 steps · 50 completed", "50 requests"], "the summary")
        assert _alignments(page, ".nh-cell table td") == {"left"}
        last = cell.locator("details.nh-step").last
        last.locator("summary").first.click()
        last.locator(".nh-outcome").wait_for(state="visible")
        _assert_facts(last.locator(".nh-outcome").inner_text(), ["-> \"bug\""], "step #50")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        cell.screenshot(path=str(SCREENSHOTS / "static-export-loop.png"))
