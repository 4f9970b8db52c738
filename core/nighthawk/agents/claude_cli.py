"""`claude-code-cli:<model>`: Claude Code's `claude` program in print mode, reading its stream of JSON events."""

from __future__ import annotations

import json
from typing import Any

from ._bridge import SERVER_NAME
from ._model import AgentFailure, Turn, TurnResult
from ._private import private_folder, write_private
from ._process import find_program, run_json_lines
from ._settings import ClaudeCodeCliModelSettings, _ClaudeCodeSettings

__all__ = ["ClaudeCodeCliBackend", "claude_mcp_servers", "claude_tool_names", "read_claude_result"]

INSTALL = "npm install -g @anthropic-ai/claude-code, then run `claude` once to log in"


def claude_mcp_servers(turn: Turn) -> dict[str, Any]:
    """The bridge as a Claude Code MCP server entry."""
    return {SERVER_NAME: {"type": "http", "url": turn.bridge.url, "headers": {"Authorization": turn.bridge.authorization}}}


def claude_tool_names(turn: Turn, settings: _ClaudeCodeSettings) -> list[str]:
    """The tools Claude Code may use without asking: the block's, then the ones the settings allow."""
    return [f"mcp__{SERVER_NAME}__{name}" for name in turn.tool_names] + list(settings.claude_allowed_tools)


def read_claude_result(event: dict[str, Any]) -> TurnResult:
    """A turn's end from Claude Code's `result` message (a JSON event, or the SDK's `ResultMessage` fields).

    Raises:
        AgentFailure: The result reports an error (turn or budget limit reached, API error, ...).
    """
    if event.get("is_error") or event.get("subtype", "success") != "success":
        detail = event.get("result") or event.get("errors") or event.get("subtype") or "unknown error"
        raise AgentFailure(f"Claude Code ended with an error ({event.get('subtype', 'error')}): {detail}")
    usage = event.get("usage") or {}
    input_tokens = sum(int(usage.get(key) or 0) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    cost = event.get("total_cost_usd")
    return TurnResult(
        text=str(event.get("result") or ""),
        session_id=event.get("session_id"),
        input_tokens=input_tokens,
        output_tokens=int(usage.get("output_tokens") or 0),
        cost_usd=None if cost is None else float(cost),
    )


class ClaudeCodeCliBackend:
    """Runs `claude -p --output-format stream-json` with the bridge given through `--mcp-config`."""

    system = "claude-code-cli"
    settings_class = ClaudeCodeCliModelSettings

    def check_installed(self, settings: Any) -> None:
        find_program(settings.executable, "claude", INSTALL)

    def arguments(self, turn: Turn, config_path: str) -> list[str]:
        """The command line of one turn (the prompt goes to its standard input)."""
        settings: ClaudeCodeCliModelSettings = turn.settings  # type: ignore[assignment]
        argv = [
            find_program(settings.executable, "claude", INSTALL),
            "-p",
            "--output-format", "stream-json",
            "--verbose",  # stream-json in print mode requires it
            "--mcp-config", config_path,
            "--strict-mcp-config",
            "--allowedTools", ",".join(claude_tool_names(turn, settings)),
            "--append-system-prompt", turn.instructions,
        ]
        options = {
            "--model": turn.model,
            "--permission-mode": settings.permission_mode,
            "--max-turns": settings.max_turns,
            "--max-budget-usd": settings.max_budget_usd,
            "--resume": turn.session_id,
            "--setting-sources": None if settings.setting_sources is None else ",".join(settings.setting_sources),
        }
        for flag, value in options.items():
            if value is not None:
                argv += [flag, str(value)]
        return argv

    async def run_turn(self, turn: Turn) -> TurnResult:
        results: list[TurnResult] = []

        def on_event(event: dict[str, Any]) -> None:
            if event.get("type") == "result":
                results.append(read_claude_result(event))

        # The token is in the config file, not on the command line where other users' `ps` could read it.
        with private_folder() as folder:
            config_path = write_private(folder, "mcp.json", json.dumps({"mcpServers": claude_mcp_servers(turn)}))
            await run_json_lines(
                self.arguments(turn, config_path),
                stdin=turn.prompt,
                cwd=turn.settings.working_directory,
                env={},
                on_event=on_event,
            )
        if not results:
            raise AgentFailure("claude ended without a result message")
        return results[-1]
