"""What a `nighthawk.map` pays and says about it: equal items run once, a map whose requests keep failing for
a common reason stops at once, and its summary and usage tell the truth (failed items, unknown cost).

Equal items use a scripted model; the failures come from the test suite's local OpenAI-compatible server (or
from a port where nothing listens), through the real OpenAI client.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.prompting import _tokens
from nighthawk.batch.progress import use_renderer
from nighthawk.batch.store import session_store
from support import openai_server

Reply, Status, tool_call = openai_server.Reply, openai_server.Status, openai_server.tool_call

pytestmark = pytest.mark.usefixtures("fresh_session_store")


# --- equal items --------------------------------------------------------------------------------------


class Counting:
    """A scripted model answering each step with `expression` after `delay_s` (so equal items are in flight
    together); counts requests."""

    def __init__(self, expression: str, delay_s: float = 0.02) -> None:
        self.expression = expression
        self.delay_s = delay_s
        self.requests = 0
        self.lock = threading.Lock()

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        with self.lock:
            self.requests += 1
        await asyncio.sleep(self.delay_s)
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": self.expression})])

    def executor(self) -> nh.AgentStepExecutor:
        model = FunctionModel(self, model_name="scripted")
        return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=model))


@nh.natural_function
def category(text: str) -> str:
    """natural
    Name the category of <text>.
    """


def no_category(text: str) -> str:
    raise ValueError(f"no category for {text!r}")


COLUMN = ["refund", "login", "refund", "refund", "login", "shipping", "refund", "login"]


def test_equal_items_ask_the_model_once_and_keep_their_places() -> None:
    model = Counting("text.upper()")
    with nh.run(model.executor()):
        result = nh.map(category, COLUMN, concurrency=8, progress=False)
    assert list(result) == [text.upper() for text in COLUMN]
    assert model.requests == 3  # all eight were in flight at once: the equal ones waited for the first


def test_usage_says_how_many_items_were_answered_by_another_item() -> None:
    with nh.run(Counting("text.upper()").executor()):
        result = nh.map(category, COLUMN, progress=False)
    assert result.usage.items_shared == 5
    assert result.usage.items_kept == 0


def test_a_failure_is_shared_by_the_equal_items_and_counted_once(capsys: pytest.CaptureFixture[str]) -> None:
    model = Counting("no_category(text) if text == 'refund' else text.upper()")
    with nh.run(model.executor()):
        result = nh.map(category, COLUMN, on_error="collect", progress=True)
    refunds = [index for index, text in enumerate(COLUMN) if text == "refund"]
    assert sorted(result.errors) == refunds
    assert len({id(error) for error in result.errors.values()}) == 1  # one failure, shared
    line = capsys.readouterr().err.split("\r")[-1]
    session_store().clear()
    distinct = Counting(model.expression)
    with nh.run(distinct.executor()):
        nh.map(category, sorted(set(COLUMN)), on_error="collect", progress=False)
    assert model.requests == distinct.requests  # what the three distinct items alone ask
    assert "| 1 failed |" in line and "5 answered by another item" in line


@pytest.mark.parametrize("concurrency", [1, 2, 8])
def test_a_first_map_keeps_nothing_and_shares_the_same_items_whatever_its_concurrency(concurrency) -> None:
    with nh.run(Counting("text.upper()", delay_s=0.0).executor()):
        result = nh.map(category, COLUMN, concurrency=concurrency, progress=False)
    assert (result.usage.items_kept, result.usage.items_shared) == (0, len(COLUMN) - len(set(COLUMN)))


def test_kept_items_are_those_of_an_earlier_map_only() -> None:
    with nh.run(Counting("text.upper()", delay_s=0.0).executor()):
        nh.map(category, COLUMN[:2], progress=False)
        result = nh.map(category, COLUMN, concurrency=1, progress=False)
    assert (result.usage.items_kept, result.usage.items_shared) == (7, 0)  # refund and login came from the first


def test_the_progress_line_says_how_many_items_were_answered_by_another_item(capsys: pytest.CaptureFixture[str]) -> None:
    with nh.run(Counting("text.upper()").executor()):
        nh.map(category, COLUMN, progress=True)
    assert capsys.readouterr().err.split("\r")[-1].startswith("nighthawk.map 8/8 | 5 answered by another item | 0 failed")


def test_the_notebook_summary_says_how_many_items_were_answered_by_another_item() -> None:
    from nighthawk_ipython._mapview import MapView

    shown: list[object] = []
    made: list[MapView] = []

    def factory(total, usage, progress):
        made.append(MapView(total, usage, mode="text", show=shown.append, live=False, mute=lambda muted: None))
        return made[-1]

    previous = use_renderer(factory)
    try:
        with nh.run(Counting("text.upper()").executor()):
            nh.map(category, COLUMN)
    finally:
        use_renderer(previous)
    (summary,) = shown
    assert "5 answered by another item" in summary.text  # type: ignore[attr-defined]


# --- stopping on a common cause -----------------------------------------------------------------------


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """


TEXTS = [f"word {n}" for n in range(40)]


def openai_executor(max_retries: int | None = None) -> nh.AgentStepExecutor:
    configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-test", max_retries=max_retries)
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")  # gpt-test's vocabulary would be downloaded
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with override_allow_model_requests(True):
        yield


def serve(monkeypatch: pytest.MonkeyPatch, script: object) -> openai_server.ScriptedOpenAIServer:
    server = openai_server.ScriptedOpenAIServer(script, lifetime=60.0)  # type: ignore[arg-type]
    server.__enter__()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server


@pytest.fixture
def dead_port(monkeypatch: pytest.MonkeyPatch) -> str:
    """A loopback address where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    return url


RETURN_SHOUT = Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="text.upper()")])


@pytest.mark.parametrize("on_error", ["collect", "raise"])
def test_a_map_where_nothing_listens_stops_at_the_first_failure_naming_the_cause(provider, dead_port, on_error) -> None:
    with nh.run(openai_executor(max_retries=0)), pytest.raises(nh.MapStoppedError) as caught:
        nh.map(shout, TEXTS, on_error=on_error, progress=False)
    error = caught.value
    assert "connection refused" in str(error) and error.affected >= 1
    assert len(error.partial.errors) < len(TEXTS)  # not every item failed in turn
    assert "items were not run" in str(error)


def test_a_host_name_that_does_not_resolve_stops_the_map(provider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://nighthawk-test-host.invalid/v1")
    with nh.run(openai_executor(max_retries=0)), pytest.raises(nh.MapStoppedError, match="DNS failure"):
        nh.map(shout, TEXTS, on_error="collect", progress=False)


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refused_key_or_an_unknown_model_stops_the_map_without_retrying(provider, monkeypatch, status) -> None:
    server = serve(monkeypatch, lambda request: Status(status, "no"))
    try:
        with nh.run(openai_executor()), pytest.raises(nh.MapStoppedError, match=f"HTTP {status}"):
            nh.map(shout, TEXTS, on_error="collect", retries=3, concurrency=4, progress=False)
    finally:
        server.__exit__(None, None, None)
    assert server.request_count <= 4  # the items in flight when the first answer came, none of them again


def test_the_same_failure_in_a_row_stops_the_map(provider, monkeypatch) -> None:
    from nighthawk.batch.stopping import CONSECUTIVE_FAILURES

    server = serve(monkeypatch, lambda request: Status(400, "not like this"))
    try:
        with nh.run(openai_executor(max_retries=0)), pytest.raises(nh.MapStoppedError) as caught:
            nh.map(shout, TEXTS, on_error="collect", concurrency=1, progress=False)
    finally:
        server.__exit__(None, None, None)
    assert f"{CONSECUTIVE_FAILURES} items in a row failed the same way: HTTP 400" in str(caught.value)
    assert caught.value.affected == CONSECUTIVE_FAILURES
    assert server.request_count == CONSECUTIVE_FAILURES


def test_failures_between_successes_do_not_stop_the_map(provider, monkeypatch) -> None:
    server = serve(monkeypatch, lambda request: Status(400, "not like this") if request.index % 2 else RETURN_SHOUT)
    try:
        with nh.run(openai_executor(max_retries=0)):
            result = nh.map(shout, TEXTS[:12], on_error="collect", concurrency=1, progress=False)
    finally:
        server.__exit__(None, None, None)
    assert sorted(result.errors) == list(range(1, 12, 2))


def test_a_stopped_map_keeps_what_finished_and_the_next_run_runs_only_the_rest(provider, monkeypatch) -> None:
    first = serve(monkeypatch, lambda request: RETURN_SHOUT if request.index < 6 else Status(401, "key revoked"))
    try:
        with nh.run(openai_executor()), pytest.raises(nh.MapStoppedError) as caught:
            nh.map(shout, TEXTS, on_error="collect", concurrency=1, progress=False)
    finally:
        first.__exit__(None, None, None)
    assert list(caught.value.partial[:6]) == [text.upper() for text in TEXTS[:6]]
    assert "The 6 finished items are kept" in str(caught.value)
    again = serve(monkeypatch, lambda request: RETURN_SHOUT)
    try:
        with nh.run(openai_executor()):
            result = nh.map(shout, TEXTS, progress=False)
    finally:
        again.__exit__(None, None, None)
    assert list(result) == [text.upper() for text in TEXTS]
    assert again.request_count == len(TEXTS) - 6


def test_the_eval_stops_when_the_model_cannot_be_reached(provider, dead_port) -> None:
    from nighthawk.eval import run_suite

    with nh.run(openai_executor(max_retries=0)):
        result = run_suite(concurrency=2)
    assert "connection refused" in result.stopped
    statuses = [check.status for check in result.checks]
    assert statuses.count("not run") > len(statuses) // 2


# --- honest summaries ---------------------------------------------------------------------------------


def test_an_item_that_stops_the_map_counts_as_failed_and_the_summary_names_it(capsys) -> None:
    with nh.run(Counting("no_category(text) if text == 'shipping' else text.upper()").executor()):
        with pytest.raises(nh.MapItemError):
            nh.map(category, COLUMN, concurrency=1, progress=True)
    line = capsys.readouterr().err.split("\r")[-1]
    assert "| 1 failed |" in line
    assert "stopped at item 5: ExecutionError: the model did not end the step with a valid outcome" in line


def test_an_unpriced_run_reports_its_cost_as_unknown_not_zero(capsys) -> None:
    with nh.run(Counting("text.upper()").executor()):
        result = nh.map(category, COLUMN, progress=True)
    assert result.usage.cost_usd is None
    assert "| cost unknown |" in capsys.readouterr().err.split("\r")[-1]


def test_a_run_answered_from_the_store_spends_nothing_and_keeps_an_unknown_cost_unknown(capsys, tmp_path) -> None:
    store = str(tmp_path / "labels.sqlite")
    with nh.run(Counting("text.upper()").executor()):
        nh.map(category, COLUMN, store=store, progress=False)
        session_store().clear()
        again = nh.map(category, COLUMN, store=store, progress=True)
    assert (again.usage.requests, again.usage.items_kept, again.usage.items_shared) == (0, len(COLUMN), 0)
    assert (again.usage.cost_usd, again.usage.kept_cost_usd) == (0.0, None)  # the scripted model has no price
    assert f"| {len(COLUMN)} kept |" in capsys.readouterr().err.split("\r")[-1]


def test_requests_that_failed_at_the_provider_are_counted(provider, monkeypatch) -> None:
    server = serve(monkeypatch, lambda request: Status(400, "not like this") if request.index < 2 else RETURN_SHOUT)
    try:
        with nh.run(openai_executor(max_retries=0)):
            result = nh.map(shout, TEXTS[:4], on_error="collect", concurrency=1, progress=False)
    finally:
        server.__exit__(None, None, None)
    assert len(result.errors) == 2
    assert result.usage.requests == server.request_count == 4


def test_the_item_error_reads_as_sentences(provider, monkeypatch) -> None:
    server = serve(monkeypatch, lambda request: Status(400, "not like this"))
    try:
        with nh.run(openai_executor(max_retries=0)), pytest.raises(nh.MapItemError) as caught:
            nh.map(shout, TEXTS[:1], progress=False)
    finally:
        server.__exit__(None, None, None)
    assert "or try again later. The map stopped" in str(caught.value)
    assert ".." not in str(caught.value)


# --- what failed requests cost ------------------------------------------------------------------------


def priced_executor(max_retries: int | None = None) -> nh.AgentStepExecutor:
    configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-4o-mini", max_retries=max_retries)
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)


def every_tenth_fails(request: openai_server.RecordedRequest) -> object:
    return Status(400, "the model refuses this one") if "word 3" in str(request.body) else RETURN_SHOUT


def test_a_priced_map_where_some_requests_failed_knows_its_cost(provider, monkeypatch, capsys) -> None:
    server = serve(monkeypatch, every_tenth_fails)
    try:
        with nh.run(priced_executor(max_retries=0)):
            result = nh.map(shout, TEXTS[:10], on_error="collect", concurrency=2, progress=True)
    finally:
        server.__exit__(None, None, None)
    assert list(result.errors) == [3]
    assert result.usage.cost_usd is not None and result.usage.cost_usd > 0  # the refused request cost nothing
    assert result.usage.failed_requests == 1
    line = capsys.readouterr().err.split("\r")[-1]
    assert "cost unknown" not in line and f"${result.usage.cost_usd:.4f}" in line


def test_a_map_stopped_by_a_refused_key_costs_nothing(provider, monkeypatch) -> None:
    server = serve(monkeypatch, lambda request: Status(401, "key revoked"))
    try:
        with nh.run(priced_executor()), pytest.raises(nh.MapStoppedError) as caught:
            nh.map(shout, TEXTS, on_error="collect", concurrency=1, progress=False)
    finally:
        server.__exit__(None, None, None)
    assert caught.value.partial.usage.cost_usd == 0.0
    assert caught.value.partial.usage.requests == server.request_count == 1


def test_the_retries_the_provider_sdk_made_by_itself_are_counted(provider, monkeypatch) -> None:
    # The first two answers are 500s the OpenAI SDK retries by itself (twice, by default) before the third.
    server = serve(monkeypatch, lambda request: Status(500, "busy") if request.index < 2 else RETURN_SHOUT)
    try:
        with nh.run(priced_executor(max_retries=2)):
            result = nh.map(shout, TEXTS[:3], concurrency=1, progress=False)
    finally:
        server.__exit__(None, None, None)
    assert list(result) == [text.upper() for text in TEXTS[:3]]
    assert result.usage.requests == server.request_count == 5
    assert result.usage.failed_requests == 2


def test_a_request_that_never_reached_the_provider_is_not_counted(provider, dead_port) -> None:
    with nh.run(priced_executor(max_retries=0)), pytest.raises(nh.MapStoppedError) as caught:
        nh.map(shout, TEXTS, concurrency=1, progress=False)
    assert caught.value.partial.usage.requests == 0
