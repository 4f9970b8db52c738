"""`codex:<model>`: OpenAI Codex's `codex exec --json`, reading its stream of thread events."""

from __future__ import annotations

import json
from typing import Any

from ._bridge import SERVER_NAME
from ._model import AgentFailure, Turn, TurnResult
from ._process import find_program, run_json_lines
from ._settings import CodexModelSettings

__all__ = ["TOKEN_VARIABLE", "CodexBackend"]

INSTALL = "npm install -g @openai/codex, then run `codex login`"

TOKEN_VARIABLE = "NIGHTHAWK_MCP_TOKEN"
"""Codex reads the bridge's bearer token from this environment variable of its own process, so the token is
never on the command line."""


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is also a TOML one


class CodexBackend:
    """Runs `codex exec --json` with the bridge configured through `-c mcp_servers.nighthawk.*`."""

    system = "codex"
    settings_class = CodexModelSettings

    def check_installed(self, settings: Any) -> None:
        find_program(settings.executable, "codex", INSTALL)

    def arguments(self, turn: Turn) -> list[str]:
        """The command line of one turn (the prompt goes to its standard input)."""
        settings: CodexModelSettings = turn.settings  # type: ignore[assignment]
        server = f"mcp_servers.{SERVER_NAME}"
        argv = [
            find_program(settings.executable, "codex", INSTALL),
            "exec",
            "--json",
            "-c", f"{server}.url={_toml(turn.bridge.url)}",
            "-c", f"{server}.bearer_token_env_var={_toml(TOKEN_VARIABLE)}",
        ]
        if settings.skip_git_repo_check:
            argv.append("--skip-git-repo-check")
        options = {"--cd": settings.working_directory, "--sandbox": settings.sandbox_mode, "--model": turn.model}
        for flag, value in options.items():
            if value is not None:
                argv += [flag, value]
        if turn.session_id is not None:
            argv += ["resume", turn.session_id]
        return [*argv, "-"]  # `-`: the prompt is read from standard input

    async def run_turn(self, turn: Turn) -> TurnResult:
        state: dict[str, Any] = {"text": "", "thread": None, "usage": None}

        def on_event(event: dict[str, Any]) -> None:
            kind = event.get("type")
            if kind == "thread.started":
                state["thread"] = event.get("thread_id")
            elif kind == "item.completed" and (event.get("item") or {}).get("type") == "agent_message":
                state["text"] = str(event["item"].get("text") or "")
            elif kind == "turn.completed":
                state["usage"] = event.get("usage") or {}
            elif kind == "turn.failed":
                raise AgentFailure(f"Codex turn failed: {(event.get('error') or {}).get('message', 'unknown error')}")
            elif kind == "error":
                raise AgentFailure(f"Codex reported an error: {event.get('message', 'unknown error')}")

        # Codex has no separate system prompt in `exec`: the step's instructions open the first prompt.
        prompt = turn.prompt if turn.session_id else f"{turn.instructions}\n\n{turn.prompt}"
        await run_json_lines(
            self.arguments(turn),
            stdin=prompt,
            cwd=turn.settings.working_directory,
            env={TOKEN_VARIABLE: turn.bridge.token},
            on_event=on_event,
        )
        if state["usage"] is None:
            raise AgentFailure("codex ended without a turn.completed event")
        usage = state["usage"]
        return TurnResult(
            text=state["text"],
            session_id=state["thread"],
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
        )
