"""A local server speaking OpenAI's Batch API and Anthropic's Message Batches API (and answering direct
requests too), owned by the test suite.

It is the scripted OpenAI-compatible server (`openai_server.py`) with the batch routes added, in the wire
format of OpenAI's Batch API:

- `POST /v1/files` (multipart: `purpose=batch`, `file` a JSONL of `{"custom_id", "method", "url", "body"}`)
  answers a file object; `GET /v1/files/{id}/content` answers a file's bytes;
- `POST /v1/batches` (`input_file_id`, `endpoint`, `completion_window`, `metadata`) answers a batch object,
  `validating`; `GET /v1/batches/{id}` and `POST /v1/batches/{id}/cancel` answer it as it stands now;
- a batch is `in_progress` once made and ends `delay` seconds after it was made: `completed` (an output file of
  `{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}` lines, and an error
  file for failed lines), or, as `ending` says, `expired` or `failed` (`errors.data`) with no output.

And in the wire format of Anthropic's Messages API and Message Batches API (`anthropic_base_url`):

- `POST /v1/messages` answers a message (`tool_use` content blocks), as the scripted server answers Chat;
- `POST /v1/messages/batches` (`{"requests": [{"custom_id", "params"}]}`) answers a message batch,
  `processing_status` `in_progress` with `request_counts` (processing, succeeded, errored, canceled,
  expired); `GET /v1/messages/batches/{id}` and `POST .../cancel` (`canceling`, then `ended`) answer it as it
  stands; `GET /v1/messages/batches` lists them, newest first (`data`, `has_more`, `first_id`, `last_id`);
- once `ended`, `GET /v1/messages/batches/{id}/results` (its `results_url`) answers a JSONL of
  `{"custom_id", "result": {"type": "succeeded", "message"} | {"type": "errored", "error"} | {"type":
  "canceled"} | {"type": "expired"}}`, in reverse request order (the API promises no order).

Each line's body is answered by the script, as a direct request is (the same `Reply` rendering); a `Status`
item makes the line fail with that status (OpenAI: it goes to the error file; Anthropic: `errored`).
`create_delay` holds each batch-creating answer that many seconds after the batch was made (a client
interrupted meanwhile made a batch it never heard of). `refuse_submission` answers every upload and
batch creation with that HTTP status (an unknown model) and makes nothing; `refuse_key` answers every
request with that status (a revoked key: the provider refuses it whatever is asked) and records its path in
`refused_paths`; `list_answer`, when set, is what a look at the batch list gets (a proxy's page, an older
server that lists nothing the API's way), and `list_status` the status it gets instead. The server records uploaded lines,
batches and direct requests; it binds 127.0.0.1, and stops by itself after `lifetime` seconds.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from urllib.parse import parse_qs, urlsplit
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .openai_server import (
    CHAT_PATH,
    MESSAGES_PATH,
    RESPONSES_PATH,
    RecordedRequest,
    Reply,
    ScriptedOpenAIServer,
    ScriptItem,
    Status,
)

__all__ = ["BatchServer", "ServedBatch"]


@dataclass
class ServedBatch:
    """One batch as the server holds it."""

    id: str
    endpoint: str
    input_file_id: str
    lines: list[dict[str, Any]]
    created: float
    metadata: Mapping[str, str]
    status: str = "validating"
    """OpenAI's status; for an Anthropic batch its `processing_status` (in_progress, canceling, ended)."""
    anthropic: bool = False
    """An Anthropic message batch (its lines are normalised to `{"custom_id", "url", "body"}` too)."""
    results: list[dict[str, Any]] = field(default_factory=list)
    """An ended Anthropic batch's result lines."""
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)


class BatchServer(ScriptedOpenAIServer):
    """The scripted OpenAI server with OpenAI's Batch API.

    Args:
        script: As for `ScriptedOpenAIServer`: items in order, or a callable choosing each line's item.
        delay: Seconds from a batch's creation to its end.
        delays: Seconds for the first batches, in the order they are made (then `delay`).
        ending: How batches end, in the order they are made (`"completed"`, `"expired"`, `"failed"`); past the
            list's end, `"completed"`. An Anthropic batch that expires ends with every line `expired`.
        create_delay: Seconds each batch-creating request is held after its batch was made.
        refuse_submission: The HTTP status answering each upload and batch creation (nothing is made).
        list_answer: The JSON answering `GET /v1/batches` and `GET /v1/messages/batches` instead of the list.
        list_status: The HTTP status answering those instead of the list.
        refuse_key: The HTTP status answering every request, as a provider answers a key it refuses.
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] | Callable[[RecordedRequest], ScriptItem] | None = None,
        *,
        delay: float = 0.2,
        delays: Iterable[float] = (),
        ending: Iterable[str] = (),
        create_delay: float = 0.0,
        refuse_submission: int | None = None,
        list_answer: Any = None,
        list_status: int | None = None,
        refuse_key: int | None = None,
        **options: Any,
    ) -> None:
        options.setdefault("max_requests", 100_000)
        super().__init__(script, **options)
        self.delay = delay
        self.delays = list(delays)
        self.ending = list(ending)
        self.create_delay = create_delay
        self.refuse_submission = refuse_submission
        self.refused_submissions = 0
        self.refused_at: float | None = None
        """`time.perf_counter()` when the first submission (or, with `refuse_key`, request) was refused."""
        self.list_answer = list_answer
        self.list_status = list_status
        self.refuse_key = refuse_key
        self.refused_paths: list[str] = []
        """`METHOD path` of each request answered with `refuse_key`."""
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, ServedBatch] = {}
        self.batch_lines = 0
        self.direct_requests = 0
        self.cancelled: list[str] = []
        self._file_ids = itertools.count(1)
        self._batch_ids = itertools.count(1)
        self._batch_lock = threading.RLock()

    def start(self) -> BatchServer:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _batch_handler(self))
        httpd.daemon_threads = True
        httpd.request_queue_size = 128
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="batch-test-server", daemon=True
        )
        self._thread.start()
        self._watchdog = threading.Timer(self.lifetime, self.stop)
        self._watchdog.daemon = True
        self._watchdog.start()
        return self

    def __enter__(self) -> BatchServer:
        return self.start()

    @property
    def anthropic_base_url(self) -> str:
        """The value for `ANTHROPIC_BASE_URL` (the SDK adds `/v1/...` itself)."""
        return f"http://127.0.0.1:{self.port}"

    # --- the batch API ------------------------------------------------------------------------------------

    def upload(self, content: bytes) -> dict[str, Any]:
        with self._batch_lock:
            file_id = f"file-{next(self._file_ids)}"
            self.files[file_id] = content
        return _file_object(file_id, len(content))

    def create(self, request: Mapping[str, Any]) -> dict[str, Any]:
        content = self.files[request["input_file_id"]]
        lines = [json.loads(text) for text in content.splitlines() if text.strip()]
        batch = self._make("batch_", request["endpoint"], lines, input_file_id=request["input_file_id"], metadata=dict(request.get("metadata") or {}))
        return self.describe(batch)

    def create_messages(self, request: Mapping[str, Any]) -> dict[str, Any]:
        lines = [{"custom_id": line["custom_id"], "url": MESSAGES_PATH, "body": line["params"]} for line in request["requests"]]
        return self.describe_messages(self._make("msgbatch_", MESSAGES_PATH, lines, anthropic=True))

    def _make(self, prefix: str, endpoint: str, lines: list[dict[str, Any]], **fields: Any) -> ServedBatch:
        with self._batch_lock:
            batch_id = f"{prefix}{next(self._batch_ids)}"
            ending = self.ending.pop(0) if self.ending else "completed"
            delay = self.delays.pop(0) if self.delays else self.delay
            batch = self.batches[batch_id] = ServedBatch(
                id=batch_id, endpoint=endpoint, input_file_id=fields.pop("input_file_id", ""), lines=lines,
                created=time.time(), metadata=fields.pop("metadata", {}), **fields,
            )
            batch.status = "in_progress"
        end = self._end_messages if batch.anthropic else self._end
        threading.Timer(delay, end, args=(batch, ending)).start()
        return batch

    def cancel(self, batch_id: str) -> dict[str, Any]:
        with self._batch_lock:
            batch = self.batches[batch_id]
            if batch.anthropic:
                if batch.status == "in_progress":
                    batch.status = "canceling"
                    self.cancelled.append(batch_id)
                    threading.Timer(0.05, self._end_messages, args=(batch, "canceled")).start()
                return self.describe_messages(batch)
            if batch.status in ("validating", "in_progress", "finalizing"):
                batch.status = "cancelled"
                self.cancelled.append(batch_id)
        return self.describe(batch)

    def _end(self, batch: ServedBatch, ending: str) -> None:
        with self._batch_lock:
            if batch.status != "in_progress":
                return  # cancelled meanwhile
        if ending == "expired":
            batch.status = "expired"
            return
        if ending == "failed":
            batch.errors = [{"code": "invalid_request", "message": "scripted batch failure", "line": "1"}]
            batch.status = "failed"
            return
        output: list[bytes] = []
        errors: list[bytes] = []
        for line in batch.lines:
            request, item = self._run_line(line)
            answer = {"id": f"batch_req_{self._next_id()}", "custom_id": line["custom_id"], "error": None}
            if isinstance(item, Reply):
                answer["response"] = {"status_code": 200, "request_id": f"req_{self._next_id()}", "body": self._render(request, item)}
                output.append(json.dumps(answer).encode())
                batch.completed += 1
            else:
                code = item.code if isinstance(item, Status) else 500
                message = item.message if isinstance(item, Status) else "scripted failure"
                body = {"error": {"message": message, "type": "server_error", "code": None}}
                answer["response"] = {"status_code": code, "request_id": f"req_{self._next_id()}", "body": body}
                errors.append(json.dumps(answer).encode())
                batch.failed += 1
        with self._batch_lock:
            if output:
                batch.output_file_id = self.upload(b"\n".join(output) + b"\n")["id"]
            if errors:
                batch.error_file_id = self.upload(b"\n".join(errors) + b"\n")["id"]
            batch.status = "completed"

    def _run_line(self, line: Mapping[str, Any]) -> tuple[RecordedRequest, ScriptItem]:
        request, item = self._record(line["url"], 0, line["body"], {})
        with self._lock:
            self.requests.remove(request)  # a batch line is not a direct request
        self.batch_lines += 1
        return request, item

    def _end_messages(self, batch: ServedBatch, ending: str) -> None:
        with self._batch_lock:
            if batch.status == "ended" or (batch.status == "canceling" and ending != "canceled"):
                return
        results = []
        for line in reversed(batch.lines):  # no promised order: the client must match lines by custom_id
            if ending in ("expired", "canceled"):
                result: dict[str, Any] = {"type": ending}
            else:
                request, item = self._run_line(line)
                if isinstance(item, Reply):
                    result = {"type": "succeeded", "message": self.render_message(request, item)}
                else:
                    code = item.code if isinstance(item, Status) else 500
                    message = item.message if isinstance(item, Status) else "scripted failure"
                    result = {"type": "errored", "error": anthropic_error(code, message)}
            results.append({"custom_id": line["custom_id"], "result": result})
        with self._batch_lock:
            batch.results = results
            batch.status = "ended"

    def render_message(self, request: RecordedRequest, reply: Reply) -> dict[str, Any]:
        """A scripted reply as an Anthropic message."""
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text is not None else []
        for call in reply.calls:
            content.append({"type": "tool_use", "id": f"toolu_{self._next_id()}", "name": call.name, "input": dict(call.arguments)})
        return {
            "id": f"msg_{self._next_id()}",
            "type": "message",
            "role": "assistant",
            "model": (request.body or {}).get("model") or self.model,
            "content": content,
            "stop_reason": "tool_use" if reply.calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }

    def describe_messages(self, batch: ServedBatch) -> dict[str, Any]:
        counts = Counter(line["result"]["type"] for line in batch.results)
        ended = batch.status == "ended"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.status,
            "request_counts": {
                "processing": 0 if ended else len(batch.lines),
                "succeeded": counts["succeeded"],
                "errored": counts["errored"],
                "canceled": counts["canceled"],
                "expired": counts["expired"],
            },
            "created_at": _rfc3339(batch.created),
            "expires_at": _rfc3339(batch.created + 86_400),
            "ended_at": _rfc3339(time.time()) if ended else None,
            "archived_at": None,
            "cancel_initiated_at": _rfc3339(batch.created) if batch.id in self.cancelled else None,
            "results_url": f"{self.anthropic_base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    def list_messages(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        """`GET /v1/messages/batches`: Anthropic's page of batches, newest first."""
        return self._page(query, "after_id", anthropic=True)

    def list(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        """`GET /v1/batches`: OpenAI's page of batches, newest first."""
        return {"object": "list", **self._page(query, "after", anthropic=False)}

    def _page(self, query: Mapping[str, list[str]], cursor: str, *, anthropic: bool) -> dict[str, Any]:
        limit = int((query.get("limit") or ["20"])[0])
        after = (query.get(cursor) or [None])[0]
        with self._batch_lock:
            newest_first = [batch for batch in reversed(self.batches.values()) if batch.anthropic == anthropic]
        if after is not None:
            newest_first = newest_first[[batch.id for batch in newest_first].index(after) + 1:]
        describe = self.describe_messages if anthropic else self.describe
        page = [describe(batch) for batch in newest_first[:limit]]
        return {
            "data": page,
            "has_more": len(newest_first) > limit,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
        }

    def describe(self, batch: ServedBatch) -> dict[str, Any]:
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": int(batch.created),
            "in_progress_at": int(batch.created),
            "expires_at": int(batch.created) + 86_400,
            "request_counts": {"total": len(batch.lines), "completed": batch.completed, "failed": batch.failed},
            "metadata": dict(batch.metadata),
        }


def anthropic_error(code: int, message: str) -> dict[str, Any]:
    """Anthropic's error body for an HTTP status."""
    kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}
    return {"type": "error", "error": {"type": kind.get(code, "api_error"), "message": message}}


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def _file_object(file_id: str, size: int) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(time.time()),
        "filename": "batch.jsonl",
        "purpose": "batch",
        "status": "processed",
    }


def _multipart_file(content_type: str, raw: bytes) -> bytes:
    message = BytesParser(policy=HTTP).parsebytes(b"content-type: " + content_type.encode() + b"\r\n\r\n" + raw)
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            return part.get_payload(decode=True)
    raise ValueError("no `file` part")


def _batch_handler(server: BatchServer) -> type[BaseHTTPRequestHandler]:
    from .openai_server import _handler_class

    direct = _handler_class(server)

    class Handler(direct):  # type: ignore[misc, valid-type]
        def _refuse_key(self, method: str) -> bool:
            if server.refuse_key is None:
                return False
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            server.refused_paths.append(f"{method} {urlsplit(self.path).path}")
            server.refused_at = server.refused_at or time.perf_counter()
            code = server.refuse_key
            self._send_json(code, anthropic_error(code, "the key is refused by the test server"), {"x-should-retry": "false"})
            return True

        def do_GET(self) -> None:
            if self._refuse_key("GET"):
                return
            url = urlsplit(self.path)
            parts = url.path.strip("/").split("/")
            try:
                if server.list_status is not None and parts in (["v1", "batches"], ["v1", "messages", "batches"]):
                    self._send_json(server.list_status, anthropic_error(server.list_status, "no batch list here"))
                    return
                if server.list_answer is not None and parts in (["v1", "batches"], ["v1", "messages", "batches"]):
                    self._send_json(200, server.list_answer)
                    return
                if parts[:3] == ["v1", "messages", "batches"]:
                    if len(parts) == 3:
                        self._send_json(200, server.list_messages(parse_qs(url.query)))
                        return
                    batch = server.batches[parts[3]]
                    if len(parts) == 4:
                        self._send_json(200, server.describe_messages(batch))
                        return
                    if len(parts) == 5 and parts[4] == "results" and batch.status == "ended":
                        self._send_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in batch.results))
                        return
                if parts == ["v1", "batches"]:
                    self._send_json(200, server.list(parse_qs(url.query)))
                    return
                if parts[:2] == ["v1", "batches"] and len(parts) == 3:
                    self._send_json(200, server.describe(server.batches[parts[2]]))
                    return
                if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
                    self._send_bytes(server.files[parts[2]])
                    return
            except KeyError:
                pass
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            if self._refuse_key("POST"):
                return
            if self.path in (CHAT_PATH, RESPONSES_PATH):
                server.direct_requests += 1
                super().do_POST()
                return
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = urlsplit(self.path).path  # Anthropic's beta client adds `?beta=true`
            parts = path.strip("/").split("/")
            if server.refuse_submission is not None and path in ("/v1/files", "/v1/batches", "/v1/messages/batches"):
                server.refused_submissions += 1
                server.refused_at = server.refused_at or time.perf_counter()
                code = server.refuse_submission
                self._send_json(code, anthropic_error(code, "refused by the test server"), {"x-should-retry": "false"})
                return
            if path == MESSAGES_PATH:
                server.direct_requests += 1
                self._answer_message(raw)
            elif path == "/v1/messages/batches":
                self._send_json(200, server.create_messages(json.loads(raw)), hold=True)
            elif parts[:3] == ["v1", "messages", "batches"] and len(parts) == 5 and parts[4] == "cancel":
                self._send_json(200, server.cancel(parts[3]))
            elif self.path == "/v1/files":
                self._send_json(200, server.upload(_multipart_file(self.headers["content-type"], raw)))
            elif self.path == "/v1/batches":
                self._send_json(200, server.create(json.loads(raw)), hold=True)
            elif parts[:2] == ["v1", "batches"] and len(parts) == 4 and parts[3] == "cancel":
                self._send_json(200, server.cancel(parts[2]))
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def _send_json(self, code: int, payload: Any, headers: Mapping[str, str] | None = None, *, hold: bool = False) -> None:
            if hold:
                time.sleep(server.create_delay)
            super()._send_json(code, payload, headers)

        def _answer_message(self, raw: bytes) -> None:
            headers = {name.lower(): value for name, value in self.headers.items()}
            request, item = server._record(MESSAGES_PATH, self.connection_number, json.loads(raw), headers)
            if isinstance(item, Reply) and request.body.get("stream"):
                self._send_events(server.render_message(request, item))
            elif isinstance(item, Reply):
                self._send_json(200, server.render_message(request, item))
            elif isinstance(item, Status):
                self._send_json(item.code, anthropic_error(item.code, item.message), {"x-should-retry": "false"})
            else:
                raise TypeError(f"no Messages API answer for {item!r}")

        def _send_events(self, message: dict[str, Any]) -> None:
            """A message as Anthropic streams it: its start, each block's start, delta and stop, its end."""
            events = [{"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}]
            for index, block in enumerate(message["content"]):
                if block["type"] == "tool_use":
                    start, delta = {**block, "input": {}}, {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                else:
                    start, delta = {**block, "text": ""}, {"type": "text_delta", "text": block["text"]}
                events += [
                    {"type": "content_block_start", "index": index, "content_block": start},
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    {"type": "content_block_stop", "index": index},
                ]
            ending = {"stop_reason": message["stop_reason"], "stop_sequence": None}
            events += [{"type": "message_delta", "delta": ending, "usage": message["usage"]}, {"type": "message_stop"}]
            data = b"".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_bytes(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/octet-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
