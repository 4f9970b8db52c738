"""Start-up stays light: `import nighthawk` and `%load_ext nighthawk` leave out what only a step needs.

Each check runs in a fresh interpreter (what a new kernel pays); nothing here is timed, bench/bench_startup.py
gives the figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

STEP_ONLY = (
    "nighthawk.threads._deadline",  # the deadline watchdog
    "nighthawk.secrets._scrubber",  # secret collection and scrubbing
    "nighthawk.secrets._values",
    "nighthawk.step._tool_registry",  # the tool registry
    "nighthawk.prompting._tokens",  # token counters behind the configuration checks
    "nighthawk.prompting._render",  # the prompt and rendering stack
    "nighthawk.prompting._reprs",
    "nighthawk.prompting._summaries",
    "nighthawk.model._prompt",
    "nighthawk.prompting._media",
    "nighthawk.answers.tools",
    "nighthawk.road.runner",  # the road of a step
    "nighthawk.oversight",  # oversight and its audit hook
    "nighthawk.oversight._audit",
    "nighthawk.resilience",
    "nighthawk.batch",
    "nighthawk.events",  # the event classes (about 11 ms to make): built once someone listens
    "nighthawk.model._step_agent",  # the executor's step machinery, though `%load_ext` builds an executor
    "nighthawk.model._provider_models",
    "nighthawk.model._schema_adaptation",
    "pydantic",
    "pydantic_ai",
    "asyncio",
)

LOAD_EXT = (
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "InteractiveShell.instance().run_line_magic('load_ext', 'nighthawk')\n"
)


def loaded_after(code: str, folder: Path) -> list[str]:
    """Which of `STEP_ONLY` a fresh interpreter has imported after running `code` (from a file: a natural
    function needs its source)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    script = folder / "program.py"
    script.write_text(f"{code}\nimport sys\nprint(' '.join(m for m in {STEP_ONLY!r} if m in sys.modules))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_import_nighthawk_leaves_out_what_only_a_step_needs(tmp_path: Path) -> None:
    assert loaded_after("import nighthawk", tmp_path) == []


def test_decorating_a_natural_function_leaves_out_what_only_a_step_needs(tmp_path: Path) -> None:
    code = "import nighthawk\n@nighthawk.natural_function\ndef f(x):\n    '''natural\n    Set <:y> to <x>.\n    '''\n"
    assert loaded_after(code, tmp_path) == []


@pytest.mark.parametrize("first", ["", "import nighthawk\n"], ids=["cold", "core imported"])
def test_load_ext_leaves_out_what_only_a_step_needs(first: str, tmp_path: Path) -> None:
    assert loaded_after(first + LOAD_EXT, tmp_path) == []


def test_a_listener_still_receives_the_events_of_a_run(tmp_path: Path) -> None:
    code = (
        "import nighthawk as nh\nseen = []\n"
        "from pydantic_ai.models.function import FunctionModel\n"
        "model = FunctionModel(lambda messages, info: None)  # never asked: the run makes no step\n"
        "executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=model))\n"
        "with nh.events.listen(seen.append):\n    with nh.run(executor):\n        pass\n"
        "assert [(type(e).__name__, getattr(e, 'is_run', None)) for e in seen] == [('RunStarted', None), ('ScopeFinished', True)], seen\n"
    )
    assert "nighthawk.events" in loaded_after(code, tmp_path)


def test_public_names_of_a_step_still_resolve_on_first_use(tmp_path: Path) -> None:
    code = "import nighthawk as nh\nnh.AgentStepExecutor; nh.tool; nh.estimate_tokens; nh.oversight.read_only\n"
    assert set(loaded_after(code, tmp_path)) >= {"nighthawk.step._tool_registry", "nighthawk.prompting._tokens", "nighthawk.oversight"}


def test_the_executor_module_still_gives_its_retry_counts_and_key_check() -> None:
    from nighthawk.model import _provider_models, _step_agent
    from nighthawk.model.executor import OUTCOME_RETRIES, TOOL_RETRIES, check_credentials

    assert (OUTCOME_RETRIES, TOOL_RETRIES) == (_step_agent.OUTCOME_RETRIES, _step_agent.TOOL_RETRIES)
    assert check_credentials is _provider_models.check_credentials



def test_the_names_loaded_on_first_use_are_listed_for_tab_completion(tmp_path: Path) -> None:
    code = (
        "import nighthawk, nighthawk.model.executor\n"
        "assert {'events', 'AgentStepExecutor', 'map', 'oversight'} <= set(dir(nighthawk)), dir(nighthawk)\n"
        "assert {'OUTCOME_RETRIES', 'check_credentials'} <= set(dir(nighthawk.model.executor))\n"
    )
    assert loaded_after(code, tmp_path) == []  # listed, not loaded
