"""A local server speaking OpenAI's Batch API (and answering direct requests too), owned by the test suite.

It is the scripted OpenAI-compatible server (`openai_server.py`) with the batch routes added, in the wire
format of OpenAI's Batch API:

- `POST /v1/files` (multipart: `purpose=batch`, `file` a JSONL of `{"custom_id", "method", "url", "body"}`)
  answers a file object; `GET /v1/files/{id}/content` answers a file's bytes;
- `POST /v1/batches` (`input_file_id`, `endpoint`, `completion_window`, `metadata`) answers a batch object,
  `validating`; `GET /v1/batches/{id}` and `POST /v1/batches/{id}/cancel` answer it as it stands now;
- a batch is `in_progress` once made and ends `delay` seconds after it was made: `completed` (an output file of
  `{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}` lines, and an error
  file for failed lines), or, as `ending` says, `expired` or `failed` (`errors.data`) with no output.

Each line's body is answered by the script, as a direct request is (the same `Reply` rendering); a `Status`
item makes the line fail with that status (it goes to the error file). The server records uploaded lines,
batches and direct requests; it binds 127.0.0.1, and stops by itself after `lifetime` seconds.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .openai_server import CHAT_PATH, RESPONSES_PATH, RecordedRequest, Reply, ScriptedOpenAIServer, ScriptItem, Status

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
            list's end, `"completed"`.
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] | Callable[[RecordedRequest], ScriptItem] | None = None,
        *,
        delay: float = 0.2,
        delays: Iterable[float] = (),
        ending: Iterable[str] = (),
        **options: Any,
    ) -> None:
        options.setdefault("max_requests", 100_000)
        super().__init__(script, **options)
        self.delay = delay
        self.delays = list(delays)
        self.ending = list(ending)
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

    # --- the batch API ------------------------------------------------------------------------------------

    def upload(self, content: bytes) -> dict[str, Any]:
        with self._batch_lock:
            file_id = f"file-{next(self._file_ids)}"
            self.files[file_id] = content
        return _file_object(file_id, len(content))

    def create(self, request: Mapping[str, Any]) -> dict[str, Any]:
        content = self.files[request["input_file_id"]]
        lines = [json.loads(text) for text in content.splitlines() if text.strip()]
        with self._batch_lock:
            batch_id = f"batch_{next(self._batch_ids)}"
            ending = self.ending.pop(0) if self.ending else "completed"
            delay = self.delays.pop(0) if self.delays else self.delay
            batch = self.batches[batch_id] = ServedBatch(
                id=batch_id,
                endpoint=request["endpoint"],
                input_file_id=request["input_file_id"],
                lines=lines,
                created=time.time(),
                metadata=dict(request.get("metadata") or {}),
            )
            batch.status = "in_progress"
        threading.Timer(delay, self._end, args=(batch, ending)).start()
        return self.describe(batch)

    def cancel(self, batch_id: str) -> dict[str, Any]:
        with self._batch_lock:
            batch = self.batches[batch_id]
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
            path = line["url"]
            request, item = self._record(path, 0, line["body"], {})
            with self._lock:
                self.requests.remove(request)  # a batch line is not a direct request
            self.batch_lines += 1
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
        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            try:
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
            if self.path in (CHAT_PATH, RESPONSES_PATH):
                server.direct_requests += 1
                super().do_POST()
                return
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            parts = self.path.strip("/").split("/")
            if self.path == "/v1/files":
                self._send_json(200, server.upload(_multipart_file(self.headers["content-type"], raw)))
            elif self.path == "/v1/batches":
                self._send_json(200, server.create(json.loads(raw)))
            elif parts[:2] == ["v1", "batches"] and len(parts) == 4 and parts[3] == "cancel":
                self._send_json(200, server.cancel(parts[2]))
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def _send_bytes(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/octet-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
