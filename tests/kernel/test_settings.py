"""Kernel settings (nighthawk_ipython/_settings.py): `%config`, `configure()` and the installed executor."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from kernel_scripts import outcome, scripted
from traitlets import TraitError

import nighthawk
import nighthawk_ipython
from nighthawk_ipython._settings import LIMIT_KEYS


def test_config_magic_sets_the_display_mode(shell: Any) -> None:
    shell.run_line_magic("config", "NighthawkSettings.display = 'text'")
    assert nighthawk_ipython.configure(shell=shell).display == "text"


def test_config_magic_sets_the_model_string(shell: Any) -> None:
    shell.run_line_magic("config", "NighthawkSettings.model = 'openai-chat:gpt-4o-mini'")
    assert nighthawk.get_step_executor().configuration.model == "openai-chat:gpt-4o-mini"


def test_model_string_without_provider_is_rejected() -> None:
    settings = nighthawk_ipython.NighthawkSettings()
    with pytest.raises(TraitError, match=r"must be a `provider:model` string such as .* got 'gpt-4o'"):
        settings.model = "gpt-4o"


def test_unknown_limit_is_rejected() -> None:
    settings = nighthawk_ipython.NighthawkSettings()
    with pytest.raises(TraitError, match=r"unknown context limit\(s\) \['speed'\]"):
        settings.limits = {"speed": 1}


def test_limit_keys_match_step_context_limits() -> None:
    assert LIMIT_KEYS == tuple(field.name for field in dataclasses.fields(nighthawk.StepContextLimits))


def test_configure_installs_a_model_object_for_the_whole_kernel(shell: Any) -> None:
    model = scripted([outcome("pass")])
    nighthawk_ipython.configure(model=model, shell=shell)
    assert nighthawk.get_step_executor().configuration.model is model


def test_configure_rejects_an_unknown_display_mode(shell: Any) -> None:
    with pytest.raises(TraitError, match=r"The 'display' trait of a NighthawkSettings instance expected any of \['widget', 'html', 'text', 'none'\]"):
        nighthawk_ipython.configure(display="fancy", shell=shell)


def test_executor_set_by_the_user_is_kept_until_settings_change(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("return", return_expression="'settings'")]))
    mine = nighthawk.AgentStepExecutor.from_configuration(
        configuration=nighthawk.StepExecutorConfiguration(model=scripted([outcome("return", return_expression="'mine'")]))
    )
    nighthawk.set_default_step_executor(mine)
    assert shell.run_cell_magic("natural", "", "Who?") == "mine"


def test_status_reports_an_executor_set_elsewhere(shell: Any, use_model: Any) -> None:
    use_model(scripted([outcome("pass")]))
    nighthawk.set_default_step_executor(nighthawk.AgentStepExecutor())
    assert "in use:  AgentStepExecutor" in nighthawk_ipython.configure(shell=shell).describe()
