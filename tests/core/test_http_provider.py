"""The real provider path end to end over HTTP: pydantic-ai's OpenAI models against a loopback server.

`tests/support/openai_server.py` is a scripted OpenAI-compatible server on 127.0.0.1; `OPENAI_BASE_URL` points
pydantic-ai's `openai-chat:` (Chat Completions) and `openai-responses:` (Responses API) models at it, so every
request goes through the OpenAI SDK, httpx and a real TCP connection. Nothing leaves the machine: a
`NetworkRecorder` fails a test that connects (or resolves a name) anywhere but loopback.

Figures measured here (pydantic-ai-slim 2.68, openai 3.54), also in docs/providers.md:
- 429 and 5xx are retried by the OpenAI SDK twice (3 requests in all), then `ExecutionError("... HTTP <status> ...")`.
- `model_settings={"max_retries": 0}` makes it one request.
- `model_settings={"timeout": 0.5}` bounds each attempt; a timeout is retried like a 5xx: 3 attempts, ~3 s in all.
- `model_settings={"request_timeout": 1.0}` is one deadline over all attempts: 1 attempt, ~1 s.
"""

from __future__ import annotations

import socket
import ssl
import time

import pytest
import httpx
from pydantic_ai.exceptions import ModelConnectionError, ModelHTTPError
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from nighthawk.prompting import _tokens


from support import openai_server  # tests/ is on the path (pytest `pythonpath`)
from support.contract_blocks import compute, write_or_report
from support.http_steps import assign_and_pass

Hang, Reply, Status, tool_call = openai_server.Hang, openai_server.Reply, openai_server.Status, openai_server.tool_call

APIS = ["chat", "responses"]
OPENAI_SDK_RETRIES = 2  # openai.DEFAULT_MAX_RETRIES; pydantic-ai builds its client with the SDK default


@pytest.fixture(autouse=True)
def offline_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    # "gpt-test" maps to o200k_base, whose first use would download the vocabulary (not loopback); the
    # network recorder in `server` fails the test if that is ever attempted.
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    """A scripted server; pydantic-ai's OpenAI providers point at it and model requests are allowed."""
    with (
        openai_server.NetworkRecorder() as network,
        openai_server.ScriptedOpenAIServer(lifetime=50.0) as scripted,
        override_allow_model_requests(True),
    ):
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield scripted
    assert ("connect", "127.0.0.1") in network.events  # the recorder does see the client's connections
    assert network.non_loopback == [], "the test reached beyond loopback"


def executor(api: str, **model_settings: object) -> nh.AgentStepExecutor:
    configuration = nh.StepExecutorConfiguration(model=f"openai-{api}:gpt-test", model_settings=model_settings or None)
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)




@nh.natural_function
def increment(x: int) -> int:
    y = 0
    """natural
    Set <:y> to <x> + 1.
    """
    return y


# --- the wire format ------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_tool_call_result_and_outcome_cross_the_wire(server, api):
    server.push(Reply(calls=[tool_call("nh_eval", expression="x + 1")]), assign_and_pass())
    with nh.run(executor(api)):
        assert increment(1) == 2
    first, second = server.requests
    assert {first.path, second.path} == {openai_server.CHAT_PATH if api == "chat" else openai_server.RESPONSES_PATH}
    assert first.tool_names == ["nh_eval", "nh_assign", "nh_outcome"]
    assert second.tool_results == ['{"value": 2, "error": null}']


@pytest.mark.parametrize("api", APIS)
def test_block_that_only_writes_finishes_in_one_request(server, api):
    server.push(assign_and_pass())
    with nh.run(executor(api)):
        assert increment(41) == 42
    assert server.request_count == 1


@pytest.mark.parametrize("api", APIS)
def test_tool_error_envelope_reaches_the_model(server, api):
    server.push(Reply(calls=[tool_call("nh_eval", expression="missing_name")]), assign_and_pass())
    with nh.run(executor(api)):
        assert increment(1) == 2
    (result,) = server.requests[1].tool_results
    assert result.startswith('{"value": null, "error": {')
    assert "missing_name" in result


@pytest.mark.parametrize("api", APIS)
def test_return_outcome_crosses_the_wire(server, api):
    server.push(Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="x * 10")]))
    with nh.run(executor(api)):
        assert compute(7) == 70


@pytest.mark.parametrize("api", APIS)
def test_raise_outcome_crosses_the_wire(server, api):
    outcome = tool_call("nh_outcome", kind="raise", raise_message="x is too large", raise_error_type="ValueError")
    server.push(Reply(calls=[outcome]))
    with nh.run(executor(api)), pytest.raises(ValueError, match="x is too large"):
        compute(7)


@pytest.mark.parametrize("api", APIS)
def test_api_key_from_the_environment_is_sent_as_bearer_token(server, api):
    server.push(assign_and_pass())
    with nh.run(executor(api)):
        increment(1)
    assert server.requests[0].headers["authorization"] == "Bearer test-key"


# --- retries, timeouts and what a failure leaves behind --------------------------------------------------


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [429, 500])
def test_error_status_is_retried_twice_then_raises_execution_error(server, api, status):
    server.push(*[Status(status, "scripted failure")] * (1 + OPENAI_SDK_RETRIES))
    with nh.run(executor(api)), pytest.raises(nh.ExecutionError, match=f"HTTP {status}") as caught:
        increment(1)
    assert server.request_count == 1 + OPENAI_SDK_RETRIES
    assert isinstance(caught.value.__cause__, ModelHTTPError)
    assert caught.value.__cause__.status_code == status


def test_request_succeeds_when_a_retry_succeeds(server):
    server.push(Status(429), Status(500), assign_and_pass())
    with nh.run(executor("chat")):
        assert increment(1) == 2
    assert server.request_count == 3


def test_max_retries_setting_zero_makes_a_single_attempt(server):
    server.push(Status(500), assign_and_pass())
    with nh.run(executor("chat", max_retries=0)), pytest.raises(nh.ExecutionError, match="HTTP 500"):
        increment(1)
    assert server.request_count == 1


@pytest.mark.parametrize("api", APIS)
def test_hung_server_hits_the_per_attempt_timeout_on_every_attempt(server, api):
    server.push(*[Hang(10.0)] * (1 + OPENAI_SDK_RETRIES))
    started = time.perf_counter()
    with nh.run(executor(api, timeout=0.5)), pytest.raises(nh.ExecutionError, match="timed out"):
        increment(1)
    elapsed = time.perf_counter() - started
    # The SDK retries a timed-out attempt like a 5xx, on a new connection (the old one is abandoned).
    assert server.request_count == 1 + OPENAI_SDK_RETRIES
    assert server.connection_count == 1 + OPENAI_SDK_RETRIES
    assert 1.5 <= elapsed < 8.0


@pytest.mark.parametrize("api", APIS)
def test_hung_server_hits_the_request_deadline_once(server, api):
    server.push(Hang(10.0))
    started = time.perf_counter()
    with nh.run(executor(api, request_timeout=1.0)), pytest.raises(nh.ExecutionError, match="timed out after 1"):
        increment(1)
    elapsed = time.perf_counter() - started
    assert server.request_count == 1
    assert 0.9 <= elapsed < 5.0


@pytest.mark.parametrize("api", APIS)
def test_server_that_accepts_and_never_answers_is_named_slow_not_unreachable(server, api):
    server.push(Hang(10.0))
    configuration = nh.StepExecutorConfiguration(model=f"openai-{api}:gpt-test", request_timeout_s=1)
    with (
        nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)),
        pytest.raises(nh.ExecutionError) as caught,
    ):
        increment(1)
    message = str(caught.value)
    assert "accepted the request but sent no answer within 1 s (the model had been generating for " in message
    assert "raise `request_timeout_s`" in message and "smaller or faster model" in message
    assert "cannot connect" not in message and "Check the base URL" not in message


def test_port_where_nothing_listens_is_named_cannot_connect(monkeypatch: pytest.MonkeyPatch):
    # A socket bound and not listening holds the port: connecting to it is refused.
    with socket.socket() as bound, openai_server.NetworkRecorder() as network, override_allow_model_requests(True):
        bound.bind(("127.0.0.1", 0))
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{bound.getsockname()[1]}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        with nh.run(executor("chat", max_retries=0)), pytest.raises(nh.ExecutionError) as caught:
            increment(1)
    assert network.non_loopback == []
    message = str(caught.value)
    assert message.startswith("cannot connect to the model provider openai at http://127.0.0.1:")
    assert "Check the base URL" in message and "no answer" not in message


# --- failures no loopback server can cause (DNS, TLS, a broken answer): as pydantic-ai reports them ---------


def failing_model(error: BaseException) -> FunctionModel:
    """A model whose request fails as pydantic-ai reports a transport failure."""

    def respond(messages: object, info: object) -> ModelResponse:
        raise error

    return FunctionModel(respond, model_name="remote")


def transport_error(cause: BaseException, *, phase: str | None) -> ModelConnectionError:
    try:
        try:
            raise httpx.ConnectError("connection failed") from cause
        except httpx.ConnectError as connect_error:
            raise ModelConnectionError("remote", "Connection error.", phase=phase) from connect_error
    except ModelConnectionError as error:
        return error


@pytest.mark.parametrize(
    "cause",
    [
        socket.gaierror(-2, "Name or service not known"),
        ssl.SSLCertVerificationError(1, "certificate verify failed"),
        ConnectionRefusedError(111, "Connection refused"),
    ],
    ids=["dns", "tls", "refused"],
)
def test_dns_tls_and_refused_connections_are_named_cannot_connect(cause: BaseException) -> None:
    error = transport_error(cause, phase=None)  # the transport's own classes tell, without a phase
    configuration = nh.StepExecutorConfiguration(model=failing_model(error))
    with (
        nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)),
        pytest.raises(nh.ExecutionError, match="^cannot connect to the model provider"),
    ):
        increment(1)


def test_connection_broken_while_the_model_answered_is_named_so() -> None:
    error = ModelConnectionError("remote", "Server disconnected without sending a response.", phase="read")
    configuration = nh.StepExecutorConfiguration(model=failing_model(error))
    with (
        nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)),
        pytest.raises(nh.ExecutionError, match="broke before the answer was complete after [0-9.]+ s"),
    ):
        increment(1)


FAILURES = {
    "http-429": ([Status(429)] * 3, {}),
    "http-500": ([Status(500)] * 3, {}),
    "attempt-timeout": ([Hang(10.0)], {"timeout": 0.5, "max_retries": 0}),
    "request-deadline": ([Hang(10.0)], {"request_timeout": 0.5}),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_failed_request_commits_no_write_binding(server, failure):
    script, settings = FAILURES[failure]
    # The first response already writes `y` in the step; the request after it fails.
    server.push(Reply(calls=[tool_call("nh_assign", target_path="y", expression="f'after {x}'")]), *script)
    with nh.run(executor("chat", **settings)):
        y, error = write_or_report(1)
    assert isinstance(error, nh.ExecutionError)
    assert y == "before"
    assert server.requests[1].tool_results == ['{"value": "after 1", "error": null}']  # written in the step only
