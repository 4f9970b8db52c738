"""Fake coding agents for the tests: `claude` and `codex` programs, and a `claude_agent_sdk` module.

They speak the real programs' output (Claude Code's `--output-format stream-json` or `json`, Codex's
`exec --json` events), read the MCP server they are given the way the real ones do (an `--mcp-config` file,
`-c mcp_servers.*` overrides, the SDK's `mcp_servers` option), and call its tools with the MCP client.

What they do comes from a scenario file (`FAKE_AGENT_SCENARIO`): one list of actions per turn, a resumed
session being the next turn. Each run appends what it was given (arguments, working directory, prompt,
tools, tool results) as one JSON line to `FAKE_AGENT_LOG`.

Actions: `{"call": name, "arguments": {...}}`, `{"reply": text}` (the final reply), `{"crash": message,
"status": n}`, `{"garbage": text}` (a line that is not JSON), `{"error_result": text}`, `{"hang": true}`
(starts a helper process, writes both pids, the server's url and its token to `FAKE_AGENT_PIDFILE`, then
sleeps). The `claude` program also speaks the Agent SDK's protocol (`--input-format stream-json`), so the
real `claude_agent_sdk` can run it; the programs log their command line and environment as /proc shows them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any


def _scenario_turn(log_path: Path) -> tuple[int, list[dict[str, Any]]]:
    turns = json.loads(Path(os.environ["FAKE_AGENT_SCENARIO"]).read_text())["turns"]
    index = len(log_path.read_text().splitlines()) if log_path.exists() else 0
    return index, turns[min(index, len(turns) - 1)]


async def _act(actions: list[dict[str, Any]], url: str, headers: dict[str, str], entry: dict[str, Any]) -> str:
    """Run the actions against the MCP server; the final reply."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    reply = ""
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                entry["tools"] = [tool.name for tool in (await session.list_tools()).tools]
                for action in actions:
                    if "call" in action:
                        result = await session.call_tool(action["call"], action.get("arguments") or {})
                        text = "".join(getattr(block, "text", "") for block in result.content)
                        images = [block.mime_type for block in result.content if getattr(block, "type", "") == "image"]
                        entry["tool_results"].append({"text": text, "is_error": bool(result.is_error), "images": images})
                    elif "reply" in action:
                        reply = action["reply"]
                    elif "hang" in action:
                        _hang(url, headers)
                    elif "probe_without_token" in action:
                        async with httpx2.AsyncClient(timeout=10) as bare:
                            probe = await bare.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
                        entry["probe_status"] = probe.status_code
    return reply


def _hang(url: str, headers: dict[str, str]) -> None:
    """Start a helper of its own (as an agent starts shells), say where both are, and sleep."""
    import subprocess

    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    token = headers.get("Authorization", "").removeprefix("Bearer ")
    Path(os.environ["FAKE_AGENT_PIDFILE"]).write_text(
        json.dumps({"pid": os.getpid(), "helper": helper.pid, "url": url, "token": token})
    )
    time.sleep(120)


def _process_view() -> dict[str, Any]:
    """What any local user could see of this process: its command line and environment, as /proc shows them."""
    def read(name: str) -> list[str]:
        return Path(f"/proc/self/{name}").read_bytes().decode(errors="replace").split("\0")

    return {"cmdline": read("cmdline"), "environ": read("environ"), "pgid": os.getpgid(0), "pid": os.getpid()}


def _config_file(path: str) -> dict[str, Any]:
    """Who may read the MCP configuration file the agent was given, and where it is."""
    return {"config_path": path, "config_mode": oct(os.stat(path).st_mode & 0o777),
            "config_folder_mode": oct(os.stat(os.path.dirname(path)).st_mode & 0o777)}


def _log(entry: dict[str, Any]) -> None:
    with open(os.environ["FAKE_AGENT_LOG"], "a") as log:
        log.write(json.dumps(entry) + "\n")


def _prelude(actions: list[dict[str, Any]]) -> None:
    """The actions that end the program before it talks to the server."""
    for action in actions:
        if "crash" in action:
            sys.stderr.write(action["crash"] + "\n")
            sys.exit(action.get("status", 1))
        if "garbage" in action:
            print(action["garbage"], flush=True)
            sys.exit(0)


# --- claude -----------------------------------------------------------------------------------------


def _started() -> None:
    """Leave the program's pid where a test can check, once the step is over, that it is gone."""
    Path(os.environ["FAKE_AGENT_PIDFILE"] + ".started").write_text(str(os.getpid()))


def main_claude() -> None:
    import argparse

    _started()
    if "--input-format" in sys.argv:
        _claude_for_the_sdk()
        return
    parser = argparse.ArgumentParser(prog="claude")
    parser.add_argument("-p", "--print", action="store_true", required=True)
    parser.add_argument("--output-format", choices=["text", "json", "stream-json"], required=True)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--mcp-config", required=True)
    parser.add_argument("--strict-mcp-config", action="store_true")
    parser.add_argument("--allowedTools")
    parser.add_argument("--append-system-prompt")
    parser.add_argument("--model")
    parser.add_argument("--permission-mode", choices=["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"])
    parser.add_argument("--max-turns", type=int)
    parser.add_argument("--max-budget-usd", type=float)
    parser.add_argument("--resume")
    parser.add_argument("--setting-sources")
    arguments = parser.parse_args()
    if arguments.output_format == "stream-json" and not arguments.verbose:
        sys.exit("Error: When using --print, --output-format=stream-json requires --verbose")
    log_path = Path(os.environ["FAKE_AGENT_LOG"])
    index, actions = _scenario_turn(log_path)
    config = json.loads(Path(arguments.mcp_config).read_text())
    entry = {
        "argv": sys.argv[1:], "cwd": os.getcwd(), "prompt": sys.stdin.read(), "mcp_config": config,
        "tool_results": [], **_config_file(arguments.mcp_config), **_process_view(),
    }
    _prelude(actions)
    session_id = arguments.resume or f"session-{os.getpid()}"
    if arguments.output_format == "stream-json":
        print(json.dumps({"type": "system", "subtype": "init", "session_id": session_id, "cwd": os.getcwd(),
                          "tools": [], "mcp_servers": [{"name": name, "status": "connected"} for name in config["mcpServers"]]}), flush=True)
    server = config["mcpServers"]["nighthawk"]
    try:
        reply = asyncio.run(_act(actions, server["url"], server.get("headers") or {}, entry))
    finally:
        _log(entry)
    error = next((action["error_result"] for action in actions if "error_result" in action), None)
    result = {
        "type": "result", "subtype": "error_during_execution" if error else "success", "is_error": bool(error),
        "duration_ms": 12, "num_turns": 2, "result": error or reply, "session_id": session_id,
        "total_cost_usd": 0.0123, "usage": {"input_tokens": 100, "cache_read_input_tokens": 20, "output_tokens": 30},
    }
    if arguments.output_format == "stream-json":
        print(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]},
                          "session_id": session_id}), flush=True)
    print(json.dumps(result), flush=True)
    sys.exit(1 if error else 0)


def _claude_for_the_sdk() -> None:
    """`claude` as the Agent SDK runs it: control requests, then the prompt, as JSON lines on its input."""
    argv = sys.argv[1:]
    config_path = argv[argv.index("--mcp-config") + 1]
    config = json.loads(Path(config_path).read_text())
    log_path = Path(os.environ["FAKE_AGENT_LOG"])
    index, actions = _scenario_turn(log_path)
    entry = {"argv": argv, "mcp_config": config, "tool_results": [], **_config_file(config_path), **_process_view()}
    resumed = next((a.partition("=")[2] for a in argv if a.startswith("--resume=")), None)
    session_id = resumed or f"session-{os.getpid()}"

    def send(message: dict[str, Any]) -> None:
        print(json.dumps(message), flush=True)

    for line in sys.stdin:
        message = json.loads(line)
        if message.get("type") == "control_request":
            send({"type": "control_response",
                  "response": {"subtype": "success", "request_id": message["request_id"], "response": {}}})
        elif message.get("type") == "user":
            entry["prompt"] = message["message"]["content"]
            _prelude(actions)
            send({"type": "system", "subtype": "init", "session_id": session_id, "cwd": os.getcwd(), "tools": [],
                  "claude_code_version": "2.1.0"})
            server = config["mcpServers"]["nighthawk"]
            try:
                reply = asyncio.run(_act(actions, server["url"], server.get("headers") or {}, entry))
            finally:
                _log(entry)
            send({"type": "assistant", "session_id": session_id, "parent_tool_use_id": None,
                  "message": {"role": "assistant", "model": "fake", "content": [{"type": "text", "text": reply}]}})
            error = next((action["error_result"] for action in actions if "error_result" in action), None)
            send({"type": "result", "subtype": "error_during_execution" if error else "success", "is_error": bool(error),
                  "duration_ms": 12, "duration_api_ms": 10, "num_turns": 2, "result": error or reply,
                  "session_id": session_id, "total_cost_usd": 0.0123, "usage": {"input_tokens": 100, "output_tokens": 30}})


# --- codex ------------------------------------------------------------------------------------------


def _codex_arguments(argv: list[str]) -> dict[str, Any]:
    """`codex exec` options as the real parser takes them (flags, `-c key=value`, `resume <id>`, `-`)."""
    if not argv or argv[0] != "exec":
        sys.exit(f"fake codex: expected `exec`, got {argv[:1]}")
    parsed: dict[str, Any] = {"config": {}, "flags": [], "resume": None, "prompt": None}
    rest = argv[1:]
    while rest:
        item = rest.pop(0)
        if item == "-c":
            key, _, value = rest.pop(0).partition("=")
            parsed["config"][key] = json.loads(value)
        elif item in ("--cd", "-C", "--sandbox", "-s", "--model", "-m"):
            parsed[item.lstrip("-")] = rest.pop(0)
        elif item in ("--json", "--skip-git-repo-check"):
            parsed["flags"].append(item)
        elif item == "resume":
            parsed["resume"] = rest.pop(0)
        elif item == "-" or not item.startswith("-"):
            parsed["prompt"] = item
        else:
            sys.exit(f"error: unexpected argument '{item}' found")
    return parsed


def main_codex() -> None:
    _started()
    parsed = _codex_arguments(sys.argv[1:])
    if "--json" not in parsed["flags"]:
        sys.exit("fake codex: only --json output is faked")
    log_path = Path(os.environ["FAKE_AGENT_LOG"])
    index, actions = _scenario_turn(log_path)
    prompt = sys.stdin.read() if parsed["prompt"] == "-" else parsed["prompt"]
    entry = {"argv": sys.argv[1:], "cwd": os.getcwd(), "prompt": prompt, "tool_results": [], **_process_view()}
    _prelude(actions)
    thread = parsed["resume"] or f"thread-{os.getpid()}"
    print(json.dumps({"type": "thread.started", "thread_id": thread}), flush=True)
    print(json.dumps({"type": "turn.started"}), flush=True)
    config = parsed["config"]
    token = os.environ.get(config.get("mcp_servers.nighthawk.bearer_token_env_var", ""), "")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        reply = asyncio.run(_act(actions, config["mcp_servers.nighthawk.url"], headers, entry))
    finally:
        _log(entry)
    error = next((action["error_result"] for action in actions if "error_result" in action), None)
    if error:
        print(json.dumps({"type": "turn.failed", "error": {"message": error}}), flush=True)
        sys.exit(1)
    print(json.dumps({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": reply}}), flush=True)
    print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 20, "output_tokens": 30}}), flush=True)


# --- the SDK ----------------------------------------------------------------------------------------


def fake_sdk_module() -> Any:
    """A stand-in for `claude_agent_sdk` with the names Nighthawk uses: `ClaudeAgentOptions`, `query`,
    `ResultMessage`, `ClaudeSDKError`; `query` acts out the scenario in this process."""
    import types

    module = types.ModuleType("claude_agent_sdk")

    @dataclasses.dataclass
    class ClaudeAgentOptions:
        allowed_tools: list[str] = dataclasses.field(default_factory=list)
        system_prompt: Any = None
        mcp_servers: dict[str, Any] | str = dataclasses.field(default_factory=dict)
        permission_mode: str | None = None
        resume: str | None = None
        max_turns: int | None = None
        max_budget_usd: float | None = None
        model: str | None = None
        cwd: str | None = None
        cli_path: str | None = None
        setting_sources: list[str] | None = None

    @dataclasses.dataclass
    class ResultMessage:
        subtype: str
        duration_ms: int
        duration_api_ms: int
        is_error: bool
        num_turns: int
        session_id: str
        total_cost_usd: float | None = None
        usage: dict[str, Any] | None = None
        result: str | None = None

    class ClaudeSDKError(Exception):
        pass

    class ProcessError(ClaudeSDKError):
        pass

    class CLIJSONDecodeError(ClaudeSDKError):
        pass

    module.calls = []  # type: ignore[attr-defined]
    module.closed = []  # type: ignore[attr-defined]

    async def query(*, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Any]:
        log_path = Path(os.environ["FAKE_AGENT_LOG"])
        index, actions = _scenario_turn(log_path)
        servers = options.mcp_servers
        if isinstance(servers, str):  # a path, as the real SDK hands it to `claude --mcp-config`
            servers = json.loads(Path(servers).read_text())["mcpServers"]
        entry = {"options": {k: v for k, v in dataclasses.asdict(options).items() if k != "mcp_servers"},
                 "mcp_servers": servers, "prompt": prompt, "tool_results": []}
        try:
            for action in actions:
                if "crash" in action:
                    _log(entry)
                    raise ProcessError(f"Command failed with exit code {action.get('status', 1)}: {action['crash']}")
                if "garbage" in action:
                    _log(entry)
                    raise CLIJSONDecodeError(f"Failed to decode JSON: {action['garbage'][:100]}...")
                if "hang" in action:
                    _log(entry)
                    url = servers["nighthawk"]["url"]
                    Path(os.environ["FAKE_AGENT_PIDFILE"]).write_text(json.dumps({"pid": None, "url": url}))
                    await asyncio.sleep(120)
            server = servers["nighthawk"]
            try:
                reply = await _act([a for a in actions if "hang" not in a], server["url"], server.get("headers") or {}, entry)
            finally:
                _log(entry)
            error = next((action["error_result"] for action in actions if "error_result" in action), None)
            yield ResultMessage(
                subtype="error_during_execution" if error else "success", duration_ms=12, duration_api_ms=10,
                is_error=bool(error), num_turns=2, session_id=options.resume or f"sdk-session-{index}",
                total_cost_usd=0.0123, usage={"input_tokens": 100, "output_tokens": 30}, result=error or reply,
            )
        finally:
            module.closed.append(index)  # type: ignore[attr-defined]

    module.ClaudeAgentOptions = ClaudeAgentOptions  # type: ignore[attr-defined]
    module.ResultMessage = ResultMessage  # type: ignore[attr-defined]
    module.ClaudeSDKError = ClaudeSDKError  # type: ignore[attr-defined]
    module.ProcessError = ProcessError  # type: ignore[attr-defined]
    module.query = query  # type: ignore[attr-defined]
    return module


if __name__ == "__main__":
    {"claude": main_claude, "codex": main_codex}[sys.argv.pop(1)]()
