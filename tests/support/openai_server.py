"""A small scripted OpenAI-compatible server on loopback, owned by the test suite.

It answers `POST /v1/chat/completions` and `POST /v1/responses` (non-streaming) over HTTP/1.1 with
keep-alive, so a real `openai.AsyncOpenAI` client (and pydantic-ai's OpenAI models on top of it) talks to it
exactly as it would talk to the real service. Each request takes the next item of a script:

- `Reply(calls=..., text=...)`: a model turn, rendered in the wire format of the endpoint that was called
  (Chat Completions `tool_calls` or Responses `function_call` items);
- `Status(code, ...)`: an error status with an OpenAI-style error body (429, 500, ...);
- `Hang(seconds)`: accept the request, never answer, and drop the connection after `seconds`.

The script is a list (consumed in order; more items can be pushed while running) or a callable
`(RecordedRequest) -> item`. The server records every request with the number of the TCP connection it
arrived on, so tests can count requests and distinct connections.

Everything is bounded: the server binds 127.0.0.1 on a free port, stops by itself after `lifetime` seconds
or `max_requests` requests, idle keep-alive connections close after `idle_timeout` seconds, and a hang
ends at the latest when the server stops.

Usage:

    with ScriptedOpenAIServer([Reply(calls=[tool_call("nh_outcome", kind="pass")])]) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        ...
    assert server.request_count == 1 and server.connection_count == 1
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

__all__ = [
    "CHAT_PATH",
    "MESSAGES_PATH",
    "RESPONSES_PATH",
    "Hang",
    "NetworkRecorder",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ScriptedOpenAIServer",
    "Status",
    "ToolCall",
    "tool_call",
]

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
MESSAGES_PATH = "/v1/messages"
"""Anthropic's Messages API: `BatchServer` (batch_server.py) answers it; this server does not."""


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One function call the scripted model makes."""

    name: str
    """Tool name, for example `nh_assign` or the output tool `nh_outcome`."""
    arguments: Mapping[str, Any]
    """JSON arguments; sent as a JSON string, as the real API does."""


def tool_call(name: str, **arguments: Any) -> ToolCall:
    """`tool_call("nh_assign", target_path="y", expression="x + 1")`."""
    return ToolCall(name=name, arguments=arguments)


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A successful model turn: tool calls (run in order) and/or text."""

    calls: tuple[ToolCall, ...] = ()
    """Function calls in the order the model makes them."""
    text: str | None = None
    """Assistant text, if any."""
    cut: bool = False
    """Chat Completions only: the answer stopped at the output cap (`finish_reason` "length"), as a local model
    that never ends its turn does."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))


@dataclass(frozen=True)
class Status:
    """An HTTP error answer with an OpenAI-style error body."""

    code: int
    """The HTTP status, for example 429 or 500."""
    message: str = "scripted error"
    """`error.message` in the body."""
    retry_after_ms: int | None = 10
    """Sent as `retry-after-ms`; the OpenAI SDK waits that long before retrying (instead of 0.5 s, 1 s, ...)."""
    should_retry: bool | None = None
    """Sent as `x-should-retry` when set; the OpenAI SDK obeys it over its status-code rules."""


@dataclass(frozen=True)
class Hang:
    """Read the request, never answer, and close the connection after `seconds` (or when the server stops)."""

    seconds: float = 10.0


ScriptItem: TypeAlias = Reply | Status | Hang


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One HTTP request the server received."""

    index: int
    """0-based order of arrival."""
    path: str
    """Request path, for example `/v1/responses`."""
    connection: int
    """1-based number of the TCP connection it arrived on."""
    body: Any
    """The parsed JSON body (`None` if it was not JSON)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Request headers, lower-cased names (the test key is a dummy)."""

    @property
    def api(self) -> str:
        """`chat`, `responses` or (Anthropic's) `messages`."""
        return {RESPONSES_PATH: "responses", MESSAGES_PATH: "messages"}.get(self.path.split("?")[0], "chat")

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered to the model in this request (function and output tools)."""
        names = []
        for tool in (self.body or {}).get("tools") or []:
            function = tool.get("function", tool)  # Chat nests the definition under `function`
            names.append(function.get("name"))
        return names

    @property
    def tool_results(self) -> list[str]:
        """Texts of the tool results sent back to the model, oldest first."""
        body = self.body or {}
        if self.api == "responses":
            items = body.get("input") or []
            outputs = [item for item in items if isinstance(item, dict) and item.get("type") == "function_call_output"]
            return [_text(item.get("output")) for item in outputs]
        if self.api == "messages":  # `tool_result` blocks in the user turns
            blocks = [block for message in body.get("messages") or [] if isinstance(message.get("content"), list) for block in message["content"]]
            return [_text(block.get("content")) for block in blocks if isinstance(block, dict) and block.get("type") == "tool_result"]
        messages = body.get("messages") or []
        return [_text(message.get("content")) for message in messages if message.get("role") == "tool"]


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else str(content)


class ScriptedOpenAIServer:
    """An OpenAI-compatible HTTP/1.1 server on 127.0.0.1 that answers from a script.

    Args:
        script: Items consumed in order, or a callable choosing the item for each request. An exhausted list
            answers 500 with `x-should-retry: false` and "script exhausted", so the client does not retry.
        lifetime: Seconds after which the server stops by itself.
        max_requests: Requests after which the server answers 503 (not retryable) and stops.
        idle_timeout: Seconds an idle keep-alive connection is kept open.
        model: The model name echoed in answers.
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] | Callable[[RecordedRequest], ScriptItem] | None = None,
        *,
        lifetime: float = 60.0,
        max_requests: int = 500,
        idle_timeout: float = 15.0,
        model: str = "gpt-test",
    ) -> None:
        self._script: Any = script if callable(script) else list(script or ())
        self.lifetime = lifetime
        self.max_requests = max_requests
        self.idle_timeout = idle_timeout
        self.model = model
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._connections = 0
        self._sockets: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._watchdog: threading.Timer | None = None

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> ScriptedOpenAIServer:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-test-server", daemon=True
        )
        self._thread.start()
        self._watchdog = threading.Timer(self.lifetime, self.stop)
        self._watchdog.daemon = True
        self._watchdog.start()
        return self

    def stop(self) -> None:
        """Stop serving, end hangs, and close every open connection (idempotent)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._watchdog is not None and self._watchdog is not threading.current_thread():
            self._watchdog.cancel()
        httpd = self._httpd
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- what tests use -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The value for `OPENAI_BASE_URL`."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def request_count(self) -> int:
        """HTTP requests received so far (including those answered with an error status or a hang)."""
        with self._lock:
            return len(self.requests)

    @property
    def connection_count(self) -> int:
        """Distinct TCP connections accepted so far."""
        with self._lock:
            return self._connections

    @property
    def remaining(self) -> int:
        """Items left in a list script."""
        with self._lock:
            return len(self._script) if isinstance(self._script, list) else 0

    def push(self, *items: ScriptItem) -> None:
        """Append items to a list script."""
        with self._lock:
            assert isinstance(self._script, list), "push() needs a list script"
            self._script.extend(items)

    # --- called from handler threads -----------------------------------------------------------------

    def _open(self, sock: socket.socket) -> int:
        with self._lock:
            self._connections += 1
            self._sockets.add(sock)
            return self._connections

    def _close(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)

    def _record(
        self, path: str, connection: int, body: Any, headers: Mapping[str, str]
    ) -> tuple[RecordedRequest, ScriptItem]:
        with self._lock:
            request = RecordedRequest(
                index=len(self.requests), path=path, connection=connection, body=body, headers=dict(headers)
            )
            self.requests.append(request)
            if len(self.requests) > self.max_requests:
                return request, Status(503, f"max_requests={self.max_requests} reached", should_retry=False)
            if isinstance(self._script, list):
                if not self._script:
                    return request, Status(500, "script exhausted", retry_after_ms=None, should_retry=False)
                return request, self._script.pop(0)
        return request, self._script(request)

    def _next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def _render(self, request: RecordedRequest, reply: Reply) -> dict[str, Any]:
        model = (request.body or {}).get("model") or self.model
        number = self._next_id()
        ids = [self._next_id() for _ in reply.calls]
        if request.api == "responses":
            output: list[dict[str, Any]] = []
            if reply.text is not None:
                output.append(
                    {
                        "type": "message",
                        "id": f"msg_{number}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                    }
                )
            for call_id, call in zip(ids, reply.calls, strict=True):
                output.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{call_id}",
                        "call_id": f"call_{call_id}",
                        "name": call.name,
                        "arguments": json.dumps(call.arguments),
                        "status": "completed",
                    }
                )
            return {
                "id": f"resp_{number}",
                "object": "response",
                "created_at": 1_700_000_000,
                "model": model,
                "status": "completed",
                "output": output,
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "usage": {
                    "input_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 5,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 15,
                },
            }
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{call_id}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call_id, call in zip(ids, reply.calls, strict=True)
            ]
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


def _finish_reason(reply: Reply) -> str:
    if reply.cut:
        return "length"
    return "tool_calls" if reply.calls else "stop"


def _handler_class(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: one handler instance serves one TCP connection
        timeout = server.idle_timeout  # an idle keep-alive connection closes by itself

        def setup(self) -> None:
            super().setup()
            # Small answers on a kept-alive connection would otherwise wait for delayed ACKs (Nagle).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connection_number = server._open(self.connection)

        def finish(self) -> None:
            try:
                super().finish()
            finally:
                server._close(self.connection)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path not in (CHAT_PATH, RESPONSES_PATH):
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            headers = {name.lower(): value for name, value in self.headers.items()}
            request, item = server._record(self.path, self.connection_number, body, headers)
            match item:
                case Reply():
                    self._send_json(200, server._render(request, item))
                case Status(code=code, message=message, retry_after_ms=retry_after_ms, should_retry=should_retry):
                    extra = {}
                    if retry_after_ms is not None:
                        extra["retry-after-ms"] = str(retry_after_ms)
                    if should_retry is not None:
                        extra["x-should-retry"] = "true" if should_retry else "false"
                    error_type = "rate_limit_error" if code == 429 else "server_error"
                    self._send_json(code, {"error": {"message": message, "type": error_type, "code": None}}, extra)
                    if len(server.requests) > server.max_requests:
                        threading.Thread(target=server.stop, daemon=True).start()
                case Hang(seconds=seconds):
                    server._stopping.wait(seconds)
                    self.close_connection = True
                case _:
                    raise TypeError(f"not a script item: {item!r}")

        def _send_json(self, code: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


# --- a guard that the code under test only talks to loopback ---------------------------------------------

_recorders: list[list[tuple[str, object]]] = []
_hook_installed = False
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _recorders:
        return
    if event == "socket.connect":
        address = args[1]
        host = address[0] if isinstance(address, tuple) else address
        for recorder in _recorders:
            recorder.append(("connect", host))
    elif event == "socket.getaddrinfo":
        for recorder in _recorders:
            recorder.append(("getaddrinfo", args[0]))


class NetworkRecorder:
    """Records every outgoing socket connect and name lookup (via an audit hook) while entered.

    `non_loopback` lists the ones that would leave the machine, for example a tokenizer vocabulary download.
    """

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def __enter__(self) -> NetworkRecorder:
        global _hook_installed
        if not _hook_installed:  # audit hooks cannot be removed; one idle hook serves every recorder
            sys.addaudithook(_audit)
            _hook_installed = True
        _recorders.append(self.events)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _recorders.remove(self.events)

    @property
    def non_loopback(self) -> list[tuple[str, object]]:
        def is_loopback(host: object) -> bool:
            text = host.decode() if isinstance(host, bytes) else str(host)
            return text in _LOOPBACK or text.startswith("127.")

        return [(kind, host) for kind, host in self.events if not is_loopback(host)]
