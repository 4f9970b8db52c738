"""`StepExecutorConfiguration` and its patch are checked when built: a wrong value fails where it is written,
with a message naming the field, never in the middle of a step; a dict given for a settings class is turned
into that class."""

from __future__ import annotations

import pytest

import nighthawk as nh
from scripting import finish, scripted_executor


@nh.natural_function
def pair(first_value: int, second_value: int) -> None:
    """natural
    Look at <first_value> and <second_value>.
    """


def user_prompt(script) -> str:
    return str(script.seen[-1][0].parts[-1].content)


# --- dicts for settings classes ---------------------------------------------------------------------


def test_context_limits_given_as_a_dict_bound_the_prompt() -> None:
    executor, script = scripted_executor([finish()], context_limits={"locals_max_items": 1})
    with nh.run(executor):
        pair(1, 2)
    assert "first_value: int = 1\n<snipped>" in user_prompt(script)


def test_context_limits_dict_with_an_unknown_key_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match=r"`context_limits` has no setting 'max_items'; the settings of `StepContextLimits` are locals_max_tokens, locals_max_items"):
        nh.StepExecutorConfiguration(context_limits={"max_items": 5})


def test_context_limits_dict_with_a_bad_value_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match=r"`StepContextLimits.locals_max_items` must be a positive int, got 0"):
        nh.StepExecutorConfiguration(context_limits={"locals_max_items": 0})


def test_prompts_given_as_a_dict_are_the_templates_a_step_uses() -> None:
    executor, script = scripted_executor([finish()], prompts={"step_system_prompt_template": "Be terse."})
    with nh.run(executor):
        pair(1, 2)
    assert script.seen[-1][0].instructions == "Be terse."


def test_step_budget_given_as_a_dict_is_a_usage_budget() -> None:
    configuration = nh.StepExecutorConfiguration(step_budget={"requests": 3})
    assert configuration.step_budget == nh.UsageBudget(requests=3)


def test_context_redaction_given_as_a_dict_is_a_context_redaction() -> None:
    configuration = nh.StepExecutorConfiguration(context_redaction={"allow_names": ("sort_key",)})
    assert configuration.context_redaction == nh.ContextRedaction(allow_names=("sort_key",))


# --- values of the wrong kind -----------------------------------------------------------------------


def test_prompts_given_as_a_string_is_refused_when_built() -> None:
    with pytest.raises(TypeError, match=r"`prompts` must be a `nighthawk.StepPromptTemplates` or a dict of its fields \(step_system_prompt_template, step_user_prompt_template\), got 'x'"):
        nh.StepExecutorConfiguration(prompts="x")


def test_a_prompt_template_that_is_not_a_string_is_refused_when_built() -> None:
    with pytest.raises(TypeError, match=r"`StepPromptTemplates.step_user_prompt_template` must be a string, got None"):
        nh.StepExecutorConfiguration(prompts={"step_user_prompt_template": None})


def test_context_redaction_given_as_a_string_is_refused_when_built() -> None:
    with pytest.raises(TypeError, match=r"`context_redaction` must be a `nighthawk.ContextRedaction` or a dict of its fields \(enabled, .*\), got 'no'"):
        nh.StepExecutorConfiguration(context_redaction="no")


def test_model_settings_given_as_a_string_is_refused_when_built() -> None:
    with pytest.raises(TypeError, match=r"`model_settings` must be a dict of model settings such as \{'temperature': 0\}, got 'abc'"):
        nh.StepExecutorConfiguration(model_settings="abc")


def test_a_suffix_fragment_that_is_not_a_string_is_refused_when_built() -> None:
    with pytest.raises(TypeError, match=r"`user_prompt_suffix_fragments\[0\]` must be a string, got 1"):
        nh.StepExecutorConfiguration(user_prompt_suffix_fragments=(1,))


def test_suffix_fragments_given_as_one_string_are_refused_not_split_into_characters() -> None:
    with pytest.raises(TypeError, match=r"`system_prompt_suffix_fragments` must be a tuple, got the single string 'Be brief.'; write `system_prompt_suffix_fragments=\('Be brief.',\)`"):
        nh.StepExecutorConfiguration(system_prompt_suffix_fragments="Be brief.")


def test_fallback_models_given_as_one_string_are_refused_not_split_into_characters() -> None:
    with pytest.raises(TypeError, match=r"`fallback_models` must be a tuple, got the single string 'abc'; write `fallback_models=\('abc',\)`"):
        nh.StepExecutorConfiguration(fallback_models="abc")


def test_a_fallback_model_without_a_provider_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match=r"`fallback_models\[1\]` must be a `provider:model` string such as .*, got 'gpt-4o'"):
        nh.StepExecutorConfiguration(fallback_models=("openai:gpt-4o-mini", "gpt-4o"))


def test_an_unknown_tokenizer_encoding_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match=r"`tokenizer_encoding` 'bogus' is not a tiktoken encoding; use one of \[.*'o200k_base'.*\], 'estimate' or `None`"):
        nh.StepExecutorConfiguration(tokenizer_encoding="bogus")


def test_a_known_tokenizer_encoding_is_accepted_without_loading_its_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken
    import tiktoken.load

    def no_vocabulary(*args: object, **kwargs: object) -> None:
        raise AssertionError("the vocabulary was loaded")

    monkeypatch.setattr(tiktoken, "get_encoding", no_vocabulary)
    monkeypatch.setattr(tiktoken.load, "read_file", no_vocabulary)
    assert nh.StepExecutorConfiguration(tokenizer_encoding="cl100k_base").tokenizer_encoding == "cl100k_base"


# --- the patch --------------------------------------------------------------------------------------


def test_patch_with_context_limits_given_as_a_dict_bounds_the_prompt() -> None:
    executor, script = scripted_executor([finish()])
    patch = nh.StepExecutorConfigurationPatch(context_limits={"locals_max_items": 1})
    with nh.run(executor), nh.scope(step_executor_configuration_patch=patch):
        pair(1, 2)
    assert "first_value: int = 1\n<snipped>" in user_prompt(script)


def test_patch_with_a_value_of_the_wrong_kind_is_refused_when_built() -> None:
    with pytest.raises(TypeError, match=r"`context_redaction` must be a `nighthawk.ContextRedaction` or a dict of its fields"):
        nh.StepExecutorConfigurationPatch(context_redaction="no")


def test_patch_with_an_unknown_key_in_a_dict_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match=r"`step_budget` has no setting 'wall_time'; the settings of `UsageBudget` are requests, total_tokens, cost_usd, wall_time_s"):
        nh.StepExecutorConfigurationPatch(step_budget={"wall_time": 5})
