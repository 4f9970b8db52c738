"""What a user of a local OpenAI-compatible server (llama.cpp, Ollama, vLLM) reads when it misbehaves.

Seen with llama-server and Gemma 3 270M / SmolLM2 135M (docs/local-models.md): the chat template has no tool
section, so the server drops the tools it is sent and the model writes prose until the output cap cuts it;
a context that fills up is refused with HTTP 400 and llama.cpp's own sentence, which has no final period.
The scripted server on 127.0.0.1 (tests/support/openai_server.py) answers the same way.
"""

from __future__ import annotations

import pytest

import nighthawk as nh
from nighthawk.prompting import _tokens

from support import openai_server  # tests/ is on the path (pytest `pythonpath`)
from support.contract_blocks import compute
from support.http_steps import serving

Reply, Status = openai_server.Reply, openai_server.Status


@pytest.fixture(autouse=True)
def offline_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_tokens.ENVIRONMENT_VARIABLE, "estimate")  # no vocabulary download (not loopback)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    with serving(monkeypatch, lifetime=50.0, api_key=None) as scripted:  # a local server asks for no key
        yield scripted


def run_compute() -> str:
    executor = nh.AgentStepExecutor.from_configuration(
        configuration=nh.StepExecutorConfiguration(model="openai-chat:local", model_settings={"max_retries": 0})
    )
    with nh.run(executor), pytest.raises(nh.ExecutionError) as caught:
        compute(1)
    return str(caught.value)


def test_prose_cut_at_the_cap_in_every_answer_says_the_server_may_not_support_tool_calls(server) -> None:
    server.push(*[Reply(text="def main():\n    print(42)\n" * 20, cut=True)] * 6)
    message = run_compute()
    assert "the model's answer was cut at 4096 tokens" in message
    assert "model responses had no tool call" in message
    assert "the model's last text: 'def main():" in message
    assert "the server or its chat template may not support tool calls (see docs/local-models.md)" in message


def test_a_cut_answer_after_tool_calls_does_not_blame_the_server(server) -> None:
    server.push(
        Reply(calls=[openai_server.tool_call("nh_eval", expression="x")]),
        *[Reply(text="and then " * 50, cut=True)] * 6,
    )
    message = run_compute()
    assert "the model's answer was cut at 4096 tokens" in message
    assert "may not support tool calls" not in message


def test_the_servers_own_sentence_ends_before_nighthawks_advice(server) -> None:
    server.push(Status(400, "request (8532 tokens) exceeds the available context size (8192 tokens), try increasing it"))
    message = run_compute()
    assert "answered HTTP 400 for model 'local': request (8532 tokens) exceeds the available context size" in message
    assert "try increasing it. Check the request settings" in message
