"""`claude-code-sdk:<model>`: Claude Code through the `claude-agent-sdk` package (`query`).

The SDK starts `claude` itself. Two things are arranged around it: the MCP configuration (with the bridge's
token) goes to it as the path of a private file, never as JSON on its command line, and `claude` is started
through a launcher that makes it the leader of its own process group, so a turn that ends early stops it
and everything it started at once (the SDK alone would give it seconds to exit and only signal `claude`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
from typing import Any

from ..errors import ModelConfigurationError
from ._model import AgentFailure, Turn, TurnResult
from ._private import private_folder, write_private
from ._process import GRACE_S, find_program, forget_launched, session_launcher, signal_launched_group
from ._settings import ClaudeCodeSdkModelSettings
from .claude_cli import INSTALL, claude_mcp_servers, claude_tool_names, read_claude_result

__all__ = ["ClaudeCodeSdkBackend"]

_MISSING = (
    "`claude-code-sdk:` models need the `claude-agent-sdk` package: install it with "
    "`pip install 'nighthawk-jupyter[claude-code-sdk]'`"
)


def _sdk() -> Any:
    try:
        import claude_agent_sdk
    except ImportError:
        raise ModelConfigurationError(_MISSING) from None
    return claude_agent_sdk


class ClaudeCodeSdkBackend:
    """Runs one `claude_agent_sdk.query` per turn with the bridge among its `mcp_servers`."""

    system = "claude-code-sdk"
    settings_class = ClaudeCodeSdkModelSettings

    def check_installed(self, settings: Any) -> None:
        _sdk()

    def options(self, turn: Turn, config_path: str, cli_path: str) -> Any:
        """The SDK's `ClaudeAgentOptions` for one turn: the MCP configuration is the file at `config_path`, and
        `claude` is run through `cli_path`."""
        sdk = _sdk()
        settings: ClaudeCodeSdkModelSettings = turn.settings  # type: ignore[assignment]
        chosen = {
            "mcp_servers": config_path,  # a path: the SDK hands it to `claude --mcp-config` as it is
            "allowed_tools": claude_tool_names(turn, settings),
            "system_prompt": {"type": "preset", "preset": "claude_code", "append": turn.instructions},
            "model": turn.model,
            "permission_mode": settings.permission_mode,
            "max_turns": settings.max_turns,
            "max_budget_usd": settings.max_budget_usd,
            "cwd": settings.working_directory,
            "cli_path": cli_path,
            "resume": turn.session_id,
            "setting_sources": None if settings.setting_sources is None else list(settings.setting_sources),
        }
        given = {key: value for key, value in chosen.items() if value is not None}
        known = {f.name for f in dataclasses.fields(sdk.ClaudeAgentOptions)}
        missing = sorted(set(given) - known)
        if missing:  # an older SDK: refuse rather than drop a budget or a permission mode without a word
            raise ModelConfigurationError(
                f"the installed claude-agent-sdk has no option {missing[0]!r} (`ClaudeAgentOptions`); upgrade it with "
                "`pip install -U claude-agent-sdk`"
            )
        return sdk.ClaudeAgentOptions(**given)

    async def run_turn(self, turn: Turn) -> TurnResult:
        sdk = _sdk()
        with private_folder() as folder:
            config_path = write_private(folder, "mcp.json", json.dumps({"mcpServers": claude_mcp_servers(turn)}))
            cli_path, pidfile = session_launcher(folder, _claude_program(sdk, turn.settings.executable))  # type: ignore[attr-defined]
            # The SDK runs in a task of its own: when this turn ends early, the group is stopped before the
            # SDK's own clean-up starts (which would wait for `claude` to exit by itself).
            consuming = asyncio.ensure_future(self._consume(sdk, turn.prompt, self.options(turn, config_path, cli_path)))
            try:
                return await asyncio.shield(consuming)
            finally:
                try:
                    if not consuming.done():  # ended early: SIGTERM now, and let the SDK reap the ended `claude`
                        signal_launched_group(pidfile, signal.SIGTERM)
                        consuming.cancel()
                        await asyncio.wait({consuming}, timeout=GRACE_S)
                finally:
                    signal_launched_group(pidfile, signal.SIGKILL)  # what is left of the group, however it ended
                    forget_launched(pidfile)
                    consuming.cancel()
                    await asyncio.wait({consuming})
                    if not consuming.cancelled():
                        consuming.exception()  # retrieved: the turn's own outcome was already decided above

    async def _consume(self, sdk: Any, prompt: str, options: Any) -> TurnResult:
        result: TurnResult | None = None
        messages = sdk.query(prompt=prompt, options=options)
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


def _claude_program(sdk: Any, executable: str | None) -> str:
    """The `claude` the SDK would run: `executable`, else the one bundled with the SDK, else `claude` on PATH."""
    if executable is None and getattr(sdk, "__file__", None):
        bundled = os.path.join(os.path.dirname(sdk.__file__), "_bundled", "claude")
        if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
            return bundled
    return find_program(executable, "claude", INSTALL)
