"""The local MCP server through which a coding agent calls the block's tools.

The server does not run the tools. Each call the agent makes is handed to the model (`_model.py`) as a
`PendingCall`, which returns it to pydantic-ai as an ordinary tool call; pydantic-ai runs the tool the way it
does for any provider (user code on the caller's thread, envelopes, events) and the model settles the call
with the result. So nothing about tools differs between an API model and a coding agent.

Whoever reaches the server can run code in the user's process through `nh_eval`, so it listens on
127.0.0.1 only, on a port the system picks, and refuses every request that does not carry the step's random
bearer token (compared in constant time), and every connection that is not plain HTTP (no WebSocket). It
lives for one step: `ToolBridge` is an async context manager; once it starts closing, the token is refused
on connections still open, and nothing listens once it has exited, whether the step ended, failed or was
interrupted.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import secrets
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelConfigurationError

__all__ = ["SERVER_NAME", "PendingCall", "ToolBridge", "ToolSpec", "require_bridge"]

SERVER_NAME = "nighthawk"
"""The name the agent knows the server by (Claude Code shows its tools as `mcp__nighthawk__<tool>`)."""

_PATH = "/mcp"
_SHUTDOWN_S = 2.0


def require_bridge(extra: str) -> None:
    """Raise `ModelConfigurationError` naming the extra to install when the MCP server's packages are missing."""
    import importlib.util

    for module in ("mcp", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            raise ModelConfigurationError(
                f"`{extra}:` models serve the block's tools over MCP, which needs the `{module}` package: install "
                f"it with `pip install 'nighthawk-jupyter[{extra}]'`"
            )


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """A tool offered to the agent."""

    name: str
    description: str
    """What the agent reads about the tool."""
    parameters: Mapping[str, Any]
    """The JSON schema of its arguments."""


@dataclass(kw_only=True)
class PendingCall:
    """One tool call the agent made and waits on."""

    name: str
    arguments: dict[str, Any]
    answer: asyncio.Future[tuple[str, bool]] = field(repr=False)
    """Settled with the text the agent receives and whether it is an error."""
    images: list[tuple[str, bytes]] = field(default_factory=list, repr=False)
    """Images sent after the text (media type, bytes): what an `nh_eval` of a figure drew, set before `answer`."""


class ToolBridge:
    """A streamable-HTTP MCP server on a random loopback port, guarded by a per-step token."""

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self._tools = {spec.name: spec for spec in tools}
        self.token = secrets.token_urlsafe(32)
        self.calls: asyncio.Queue[PendingCall] = asyncio.Queue()
        self.url = ""
        self._server: Any = None
        self._serving: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Future[tuple[str, bool]]] = set()
        self._open = False
        """Whether requests bearing the token are served: from start until the bridge starts closing."""

    @property
    def tool_names(self) -> list[str]:
        return list(self._tools)

    @property
    def authorization(self) -> str:
        """The header value every request must carry."""
        return f"Bearer {self.token}"

    async def __aenter__(self) -> ToolBridge:
        import uvicorn

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted connections inherit it
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        config = uvicorn.Config(
            self._app(), log_config=None, log_level="warning", access_log=False, lifespan="on",
            timeout_graceful_shutdown=_SHUTDOWN_S, ws="none",
        )
        self._server = uvicorn.Server(config)
        # `_serve`, not `serve`: `serve` installs SIGINT handlers on the main thread, which would take the
        # user's interrupt away from the step.
        self._serving = asyncio.ensure_future(self._server._serve(sockets=[listener]))
        try:
            while not self._server.started:
                if self._serving.done():
                    self._serving.result()
                    raise RuntimeError("the MCP server stopped while starting")
                await asyncio.sleep(0.005)
        except BaseException:
            await self._stop()
            listener.close()
            raise
        self.url = f"http://127.0.0.1:{port}{_PATH}"
        self._open = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stop()

    async def _stop(self) -> None:
        self._open = False
        for answer in self._pending:
            answer.cancel()
        if self._server is None or self._serving is None:
            return
        self._server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self._serving), _SHUTDOWN_S * 2)
        except Exception:  # it did not stop in time, or failed while stopping: stop it the hard way
            self._force_stop()
        except BaseException:  # cancelled while waiting: stop it the hard way, and let the cancellation go on
            self._force_stop()
            raise
        finally:
            # An interrupt while waiting above must still leave no listener: close the sockets directly.
            for server in getattr(self._server, "servers", ()):
                server.close()
            self._serving = None

    def _force_stop(self) -> None:
        assert self._server is not None and self._serving is not None
        self._server.force_exit = True
        self._serving.cancel()

    # --- the MCP application ----------------------------------------------------------------------------

    def _app(self) -> Any:
        from mcp.server.lowlevel.server import Server

        server: Any = Server(SERVER_NAME, on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        inner = server.streamable_http_app(
            streamable_http_path=_PATH, json_response=True, stateless_http=True, host="127.0.0.1"
        )
        expected = self.authorization.encode()

        async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "lifespan":  # from the server itself, not from a client
                await inner(scope, receive, send)
                return
            if scope["type"] != "http":  # a WebSocket: refused before the application sees it
                await send({"type": "websocket.close", "code": 1008})
                return
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not (self._open and hmac.compare_digest(given, expected)):
                body = json.dumps({"error": "missing or wrong bearer token"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
            await inner(scope, receive, send)

        return guarded

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        return types.ListToolsResult(
            tools=[
                types.Tool(name=spec.name, description=spec.description, input_schema=dict(spec.parameters))
                for spec in self._tools.values()
            ]
        )

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        images: list[tuple[str, bytes]] = []
        if params.name not in self._tools:
            text, is_error = f"unknown tool {params.name!r}; the tools are {', '.join(self._tools)}", True
        else:
            answer: asyncio.Future[tuple[str, bool]] = asyncio.get_running_loop().create_future()
            self._pending.add(answer)
            try:
                call = PendingCall(name=params.name, arguments=dict(params.arguments or {}), answer=answer)
                await self.calls.put(call)
                text, is_error = await answer
                images = call.images
            finally:
                self._pending.discard(answer)
        content: list[Any] = [types.TextContent(type="text", text=text)]
        content += [
            types.ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=media_type)
            for media_type, data in images
        ]
        return types.CallToolResult(content=content, is_error=is_error)


