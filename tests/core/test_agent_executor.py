"""`AgentStepExecutor.from_agent(agent)` / `AgentStepExecutor(agent=...)`: steps run with a pydantic-ai
`Agent` of the user's own, keeping its model, model settings and tools beside the Nighthawk ones."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh
from scripting import Script, call, finish


@nh.natural_function
def label(ticket: str) -> str:
    result = ""
    """natural
    Read <ticket> and set <:result>.
    """
    return result


def users_agent(script: Script) -> Agent:
    agent = Agent(FunctionModel(script), model_settings={"temperature": 0.1})

    @agent.tool_plain
    def known_labels() -> list[str]:
        """The labels a ticket may get."""
        return ["bug", "question"]

    return agent


def test_a_step_uses_the_agents_model_and_offers_its_tools_with_ours() -> None:
    script = Script([[call("known_labels")], [call("nh_assign", target_path="result", expression="'bug'")], [finish()]])
    executor = nh.AgentStepExecutor.from_agent(users_agent(script))
    with nh.run(executor):
        assert label("it crashes") == "bug"
    offered = {tool.name for tool in script.infos[0].function_tools}
    assert {"known_labels", "nh_eval", "nh_assign"} <= offered
    assert [tool.name for tool in script.infos[0].output_tools] == ["nh_outcome"]
    assert '["bug", "question"]' in str(script.seen[1][-1].parts[0].content).replace("'", '"')


def test_the_agents_model_settings_are_sent_and_the_configurations_win() -> None:
    script = Script([[finish()], [finish()]])
    agent = users_agent(script)
    with nh.run(nh.AgentStepExecutor(agent=agent)):
        label("first")
    configuration = nh.StepExecutorConfiguration(model_settings={"temperature": 0.7})
    with nh.run(nh.AgentStepExecutor.from_agent(agent, configuration=configuration)):
        label("second")
    assert [info.model_settings["temperature"] for info in script.infos] == [0.1, 0.7]


def test_an_agent_without_a_model_takes_the_configurations() -> None:
    script = Script([[finish()]])
    agent = Agent()
    executor = nh.AgentStepExecutor.from_agent(agent, configuration=nh.StepExecutorConfiguration(model=FunctionModel(script)))
    with nh.run(executor):
        label("x")
    assert script.requests == 1
    assert executor.agent is agent


def test_a_scope_patch_keeps_the_agent() -> None:
    script = Script([[finish()]])
    executor = nh.AgentStepExecutor.from_agent(users_agent(script))
    patch = nh.StepExecutorConfigurationPatch(user_prompt_suffix_fragments=("Be brief.",))
    with nh.run(executor), nh.scope(step_executor_configuration_patch=patch) as patched:
        assert patched.agent is executor.agent
        label("x")
    assert str(script.seen[0][0].parts[-1].content).endswith("Be brief.")
