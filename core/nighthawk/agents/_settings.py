"""The settings classes of the coding-agent backends, accepted as `model_settings`.

Each is a frozen pydantic model that refuses unknown keys, so a typo or a wrong value fails when the
configuration is built rather than when the agent starts. `StepExecutorConfiguration` turns an instance into a
dict; `check_agent_settings` turns such a dict (or a hand-written one) back into the backend's class.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ModelConfigurationError

__all__ = [
    "AgentModelSettings",
    "ClaudeCodeCliModelSettings",
    "ClaudeCodeSdkModelSettings",
    "CodexModelSettings",
    "check_agent_settings",
]

_PASSED_THROUGH = frozenset({"request_timeout", "timeout", "max_retries", "max_tokens"})
"""pydantic-ai settings every model takes (`request_timeout` bounds each wait for the agent; `max_tokens`, the
output cap every request carries, is not the agent's to apply: it bounds its turns with `max_turns`)."""

_OTHER_PROVIDERS = ("openai_", "anthropic_")
"""Prefixes of settings meant for another provider's model (the prompt-cache hints every step sends): every
pydantic-ai model ignores the settings of other providers, and so does an agent."""


class AgentModelSettings(BaseModel):
    """What every coding-agent backend takes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    working_directory: str | None = None
    """The agent's working directory, where it finds the project's files; an absolute path to an existing
    directory. `None`: the current directory of this process."""

    allowed_tool_names: tuple[str, ...] | None = None
    """Which of the block's tools (`nh_eval`, `nh_assign`, user tools) the agent may call; `None`: all of them."""

    @field_validator("working_directory")
    @classmethod
    def _absolute_directory(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not os.path.isabs(value):
            raise ValueError(f"must be an absolute path, got {value!r}; write os.path.abspath({value!r})")
        resolved = os.path.realpath(value)
        if not os.path.isdir(resolved):
            raise ValueError(f"{value!r} is not an existing directory")
        return resolved


PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]


class _ClaudeCodeSettings(AgentModelSettings):
    permission_mode: PermissionMode | None = None
    """Claude Code's `--permission-mode`; `None` leaves its own setting."""

    max_turns: int | None = Field(default=None, ge=1)
    """Claude Code's `--max-turns`: agent turns before it stops."""

    max_budget_usd: float | None = Field(default=None, gt=0)
    """Claude Code's `--max-budget-usd`: dollars the agent may spend on this step."""

    claude_allowed_tools: tuple[str, ...] = ()
    """Claude Code's own tools allowed without asking (`--allowedTools`), such as `"Read"` or `"Bash(git log:*)"`;
    the block's tools are always allowed."""

    executable: str | None = None
    """The `claude` program to run (a path or a name on `PATH`); `None`: `claude`."""

    setting_sources: tuple[Literal["user", "project", "local"], ...] | None = None
    """Which Claude Code settings the agent loads (`--setting-sources`): `("project",)` loads the project's
    `CLAUDE.md` and its skills (`.claude/skills/*/SKILL.md`) from `working_directory`. `None` leaves the
    default: the `claude` program loads them all, the SDK none."""


class ClaudeCodeCliModelSettings(_ClaudeCodeSettings):
    """Settings of `claude-code-cli:<model>`: the `claude` program run in print mode."""


class ClaudeCodeSdkModelSettings(_ClaudeCodeSettings):
    """Settings of `claude-code-sdk:<model>`: Claude Code through the `claude-agent-sdk` package."""


class CodexModelSettings(AgentModelSettings):
    """Settings of `codex:<model>`: the `codex` program run with `codex exec`."""

    sandbox_mode: Literal["read-only", "workspace-write", "danger-full-access"] | None = None
    """Codex's `--sandbox`: what the commands it runs may touch; `None` leaves its own setting."""

    skip_git_repo_check: bool = True
    """Pass `--skip-git-repo-check`, so that a working directory outside a git repository is accepted."""

    executable: str | None = None
    """The `codex` program to run (a path or a name on `PATH`); `None`: `codex`."""


def check_agent_settings(
    cls: type[AgentModelSettings], model: str, settings: Mapping[str, Any] | None
) -> AgentModelSettings:
    """The backend's settings from `model_settings` (the pydantic-ai request settings among them are left aside).

    Raises:
        ModelConfigurationError: A key the backend does not have, or a value it refuses.
    """
    own = {
        key: value
        for key, value in (settings or {}).items()
        if key not in _PASSED_THROUGH and not key.startswith(_OTHER_PROVIDERS)
    }
    try:
        return cls(**own)
    except ValidationError as exc:
        problems = "; ".join(
            f"`{'.'.join(map(str, error['loc'])) or 'model_settings'}`: {error['msg']}" for error in exc.errors()
        )
        known = ", ".join(cls.model_fields)
        raise ModelConfigurationError(
            f"`model_settings` for {model!r} are not valid {cls.__name__}: {problems}. Its settings are {known}"
        ) from None
