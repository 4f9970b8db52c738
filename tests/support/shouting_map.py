"""The natural function and the model answer the map tests share: `shout(text)` over a local OpenAI server.

The scripted answer returns `text.upper() + '!'`, so a test can tell each item's result from its input.
"""

from __future__ import annotations

import nighthawk as nh
from support.openai_server import RecordedRequest, Reply, ScriptItem, tool_call


def one_round(request: RecordedRequest) -> ScriptItem:
    """The server's answer to any step of `shout`: return the text, shouted."""
    return Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="text.upper() + '!'")])


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """


def executor() -> nh.AgentStepExecutor:
    """An executor for `openai-chat:gpt-4o-mini` (the server's address comes from the environment the test
    sets) that does not retry, so a failed request is seen once."""
    configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-4o-mini", max_retries=0)
    return nh.AgentStepExecutor.from_configuration(configuration=configuration)
