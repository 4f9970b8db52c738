"""`claude-code-sdk:<model>`: Claude Code through the `claude-agent-sdk` package (`query`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import NighthawkError
from ._model import AgentFailure, Turn, TurnResult
from ._settings import ClaudeCodeSdkModelSettings
from .claude_cli import claude_mcp_servers, claude_tool_names, read_claude_result

__all__ = ["ClaudeCodeSdkBackend"]

_MISSING = (
    "`claude-code-sdk:` models need the `claude-agent-sdk` package: install it with "
    "`pip install 'nighthawk-jupyter[claude-code-sdk]'`"
)


def _sdk() -> Any:
    try:
        import claude_agent_sdk
    except ImportError:
        raise NighthawkError(_MISSING) from None
    return claude_agent_sdk


class ClaudeCodeSdkBackend:
    """Runs one `claude_agent_sdk.query` per turn with the bridge among its `mcp_servers`."""

    system = "claude-code-sdk"
    settings_class = ClaudeCodeSdkModelSettings

    def check_installed(self, settings: Any) -> None:
        _sdk()

    def options(self, turn: Turn) -> Any:
        """The SDK's `ClaudeAgentOptions` for one turn."""
        sdk = _sdk()
        settings: ClaudeCodeSdkModelSettings = turn.settings  # type: ignore[assignment]
        chosen = {
            "mcp_servers": claude_mcp_servers(turn),
            "allowed_tools": claude_tool_names(turn, settings),
            "system_prompt": {"type": "preset", "preset": "claude_code", "append": turn.instructions},
            "model": turn.model,
            "permission_mode": settings.permission_mode,
            "max_turns": settings.max_turns,
            "max_budget_usd": settings.max_budget_usd,
            "cwd": settings.working_directory,
            "cli_path": settings.executable,
            "resume": turn.session_id,
            "setting_sources": None if settings.setting_sources is None else list(settings.setting_sources),
        }
        given = {key: value for key, value in chosen.items() if value is not None}
        known = {f.name for f in dataclasses.fields(sdk.ClaudeAgentOptions)}
        missing = sorted(set(given) - known)
        if missing:  # an older SDK: refuse rather than drop a budget or a permission mode without a word
            raise NighthawkError(
                f"the installed claude-agent-sdk has no option {missing[0]!r} (`ClaudeAgentOptions`); upgrade it with "
                "`pip install -U claude-agent-sdk`"
            )
        return sdk.ClaudeAgentOptions(**given)

    async def run_turn(self, turn: Turn) -> TurnResult:
        sdk = _sdk()
        result: TurnResult | None = None
        messages = sdk.query(prompt=turn.prompt, options=self.options(turn))
        try:
            async for message in messages:
                if isinstance(message, sdk.ResultMessage):
                    result = read_claude_result(dataclasses.asdict(message))
        except sdk.ClaudeSDKError as exc:
            raise AgentFailure(str(exc) or type(exc).__name__) from exc
        finally:
            await messages.aclose()  # ends the SDK's `claude` process, also when the turn is cancelled
        if result is None:
            raise AgentFailure("the Claude Agent SDK ended without a result message")
        return result
