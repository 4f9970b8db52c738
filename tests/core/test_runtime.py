"""Runtime scoping (spec 10): run, scope, accessors, prompt suffix fragments, configuration patches."""

from __future__ import annotations

import threading

import pytest

import nighthawk as nh
from scripting import finish, scripted_executor


@nh.natural_function
def noop() -> None:
    """natural
    Nothing to do.
    """


def prompts(script) -> tuple[str, str]:
    request = script.seen[-1][0]
    return request.instructions, str(request.parts[-1].content)


def test_get_step_executor_outside_a_run_raises() -> None:
    with pytest.raises(nh.NighthawkError, match="no step executor is set"):
        nh.get_step_executor()


def test_get_execution_context_outside_a_run_raises() -> None:
    with pytest.raises(nh.NighthawkError, match="only available inside `with nighthawk.run"):
        nh.get_execution_context()


def test_run_sets_executor_and_a_fresh_execution_context() -> None:
    executor, _ = scripted_executor()
    with nh.run(executor) as active:
        assert active is executor
        assert nh.get_step_executor() is executor
        context = nh.get_execution_context()
    with nh.run(executor, run_id="parent-run"):
        assert nh.get_execution_context().run_id == "parent-run"
        assert nh.get_execution_context().scope_id != context.scope_id


def test_scope_keeps_run_id_and_changes_scope_id() -> None:
    with nh.run(scripted_executor()[0]):
        outer = nh.get_execution_context()
        with nh.scope():
            inner = nh.get_execution_context()
    assert inner.run_id == outer.run_id
    assert inner.scope_id != outer.scope_id


def test_missing_executor_error_names_the_callers_thread() -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            noop()
        except nh.NighthawkError as exc:
            errors.append(exc)

    with nh.run(scripted_executor()[0]):
        worker = threading.Thread(target=work, name="report-worker")
        worker.start()
        worker.join()
    assert "no step executor is set in thread 'report-worker': `nighthawk.run(...)` is open in another thread" in str(
        errors[0]
    )


def test_scope_without_executor_raises() -> None:
    with pytest.raises(nh.NighthawkError, match="no step executor is set"), nh.scope():
        pass


def test_scope_swaps_the_executor_only_inside() -> None:
    first, first_script = scripted_executor([finish()])
    second, second_script = scripted_executor([finish()])
    with nh.run(first):
        with nh.scope(step_executor=second) as active:
            assert active is second
            noop()
        assert nh.get_step_executor() is first
    assert (first_script.requests, second_script.requests) == (0, 1)


def test_scope_prompt_suffix_fragments_are_appended_and_nest() -> None:
    executor, script = scripted_executor([finish()])
    with nh.run(executor), nh.scope(system_prompt_suffix_fragment="Be terse."):
        with nh.scope(user_prompt_suffix_fragment="Prefer integers."):
            noop()
    system, user = prompts(script)
    assert system.endswith("\n\nBe terse.")
    assert user.endswith("<<<NH:END_LOCALS>>>\n\nPrefer integers.")


def test_scope_configuration_patch_changes_only_given_fields() -> None:
    executor, script = scripted_executor([finish()], user_prompt_suffix_fragments=("base",))
    patch = nh.StepExecutorConfigurationPatch(system_prompt_suffix_fragments=("patched",))
    with nh.run(executor), nh.scope(step_executor_configuration_patch=patch) as patched:
        assert patched.configuration.user_prompt_suffix_fragments == ("base",)
        assert patched.configuration.model is executor.configuration.model
        noop()
    system, user = prompts(script)
    assert system.endswith("patched")
    assert user.endswith("base")


def test_configuration_rejects_a_model_string_without_provider() -> None:
    with pytest.raises(ValueError, match=r"`model` must be a `provider:model` string"):
        nh.StepExecutorConfiguration(model="gpt-5")


def test_configuration_rejects_unknown_renderer_style() -> None:
    with pytest.raises(ValueError, match="`json_renderer_style` must be one of"):
        nh.StepExecutorConfiguration(json_renderer_style="pretty")  # type: ignore[arg-type]


def test_executor_construction_needs_no_key_or_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    executor = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration())
    assert executor.model_label == "openai-responses:gpt-5.4-nano"


def test_default_step_executor_serves_calls_outside_a_run() -> None:
    executor, script = scripted_executor([finish()])
    nh.set_default_step_executor(executor)
    noop()
    assert script.requests == 1


def test_current_step_context_is_available_inside_a_step_only() -> None:
    seen: list[nh.StepContext] = []

    def peek() -> str:
        seen.append(nh.get_current_step_context())
        return "ok"

    from scripting import call

    executor, _ = scripted_executor([call("nh_eval", expression="peek()")], [finish()])

    @nh.natural_function
    def block() -> None:
        """natural
        Call <peek>.
        """

    with nh.run(executor):
        block()
    assert seen[0].step_id.endswith(":" + str(block.__wrapped__.__code__.co_firstlineno + 2))  # decorator, def, then the docstring block
    with pytest.raises(nh.NighthawkError, match="no Natural block is executing"):
        nh.get_current_step_context()
