"""In a live kernel, a failed block shows one short message saying what went wrong and what to do; the whole
cause chain is there on demand (`%nighthawk traceback`, `nighthawk.last_error()`), not printed by default.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("jupyter_client")

from live import BASE_SETUP, Live, live_kernel  # noqa: E402
from support.openai_server import ScriptedOpenAIServer, Status  # noqa: E402

SHORT = 1_500
"""Characters a failed cell may show at most."""

SETUP = BASE_SETUP + '''
@nighthawk.natural_function
def never_finishes() -> None:
    """natural
    NEVER
    """

def closed_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

unreachable = nighthawk.AgentStepExecutor.from_configuration(
    configuration=nighthawk.StepExecutorConfiguration(model="openai-chat:gpt-test")
)

from pydantic_ai.models.function import FunctionModel

def _provider_down(messages, info):
    raise RuntimeError("provider down")

down = FunctionModel(_provider_down, model_name="down")

from pydantic_ai.messages import ModelResponse, ToolCallPart

def _refuse(messages, info):
    outcome = {"kind": "raise", "raise_message": "no such region", "raise_error_type": "ValueError"}
    return ModelResponse(parts=[ToolCallPart("nh_outcome", outcome)])

refusing = FunctionModel(_refuse, model_name="refusing")

@nighthawk.natural_function
def on_down_model() -> None:
    """natural
    Do it.
    """
'''


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(lambda request: Status(401, "Incorrect API key provided: sk-te**", should_retry=False)) as scripted:
        yield scripted


@pytest.fixture(scope="module")
def live(server: ScriptedOpenAIServer) -> Iterator[Live]:
    with live_kernel(SETUP, env={"OPENAI_API_KEY": "sk-test"}) as kernel:
        yield kernel


def test_step_the_model_never_ends_fails_with_a_short_message(live: Live) -> None:
    cell = live.run("%%natural\nNEVER")
    assert cell.ename == "ExecutionError"
    assert "the model did not end the step with a valid outcome" in cell.error_text
    assert "last problem:" in cell.error_text
    assert len(cell.error_text) < SHORT


def test_denied_outcome_message_carries_no_retry_limit_advice(live: Live) -> None:
    cell = live.run("%%natural --deny raise\nRAISE")
    assert "outcome 'raise' is not allowed for this block (allowed: pass, return)" in cell.error_text
    assert "Consider raising" not in cell.error_text


def test_natural_function_failing_in_a_plain_cell_shows_a_short_message(live: Live) -> None:
    cell = live.run("x = 1\nnever_finishes()")
    assert cell.ename == "ExecutionError"
    assert "never_finishes()" in cell.error_text  # the user's own line is kept
    assert len(cell.error_text) < SHORT


def test_nighthawk_traceback_prints_the_whole_cause_chain(live: Live) -> None:
    live.run("never_finishes()")
    cell = live.ok("%nighthawk traceback")
    assert "UnexpectedModelBehavior" in cell.printed
    assert "The above exception was the direct cause of the following exception" in cell.printed


def test_last_error_returns_the_failure_with_its_cause(live: Live) -> None:
    live.run("%%natural\nNEVER")
    cell = live.ok("type(nighthawk.last_error()).__name__, type(nighthawk.last_error().__cause__).__name__")
    assert cell.result == "('ExecutionError', 'UnexpectedModelBehavior')"


def test_connection_error_names_the_provider_and_the_base_url(live: Live) -> None:
    live.ok("import os\nos.environ['OPENAI_BASE_URL'] = url = f'http://127.0.0.1:{closed_port()}/v1'")
    cell = live.run("%%natural -m unreachable\nDo something.", timeout=60)
    url = live.ok("url").result.strip("'")
    assert cell.ename == "ExecutionError"
    assert f"cannot connect to the model provider openai at {url}" in cell.error_text
    assert len(cell.error_text) < SHORT


def test_http_error_shows_the_status_and_the_provider_message(live: Live, server: ScriptedOpenAIServer) -> None:
    live.ok(f"import os\nos.environ['OPENAI_BASE_URL'] = {server.base_url!r}")
    cell = live.run(
        "refused = nighthawk.AgentStepExecutor.from_configuration(configuration=nighthawk.StepExecutorConfiguration("
        "model='openai-chat:gpt-test'))\nwith nighthawk.run(refused):\n    never_finishes()"
    )
    assert cell.ename == "ExecutionError"
    assert "answered HTTP 401" in cell.error_text
    assert "Incorrect API key provided" in cell.error_text
    assert len(cell.error_text) < SHORT


def test_interpolation_error_is_one_short_line(live: Live) -> None:
    cell = live.run("%%natural -f\nUse {missing_name} here.")
    assert cell.ename == "UsageError"
    assert "a `{...}` field raised NameError: name 'missing_name' is not defined" in cell.printed
    assert len(cell.printed + cell.error_text) < SHORT


def test_error_raised_by_the_users_own_model_keeps_its_type_and_is_shown_short(live: Live) -> None:
    cell = live.run("%%natural -m down\nDo it.")
    assert cell.ename == "RuntimeError"
    assert "RuntimeError: provider down" in cell.error_text
    assert "_loop.py" not in cell.error_text and "pydantic_ai" not in cell.error_text
    assert len(cell.error_text) < SHORT


def test_error_raised_by_the_model_of_a_natural_function_in_a_plain_cell_is_shown_short(live: Live) -> None:
    cell = live.run("%nighthawk model down\ntry:\n    on_down_model()\nfinally:\n    get_ipython().run_line_magic('nighthawk', 'model directed')")
    assert cell.ename == "RuntimeError"
    assert "on_down_model()" in cell.error_text  # the user's own line is kept
    assert "_loop.py" not in cell.error_text and "pydantic_ai" not in cell.error_text
    assert len(cell.error_text) < SHORT


def test_raise_outcome_shows_the_exception_it_names_without_nighthawk_frames(live: Live) -> None:
    cell = live.run("%%natural -m refusing\nFind the region.")
    assert cell.ename == "ValueError"
    assert cell.error_text.endswith("ValueError: no such region")
    assert "_magics.py" not in cell.error_text
