"""The OpenAI Batch API (and OpenAI-compatible providers'): a JSONL file uploaded to `/v1/files`, a batch made
with `/v1/batches`, polled, and its output and error files read back.

Each line carries the request body exactly as the SDK made it for a direct request. The batch itself is
managed through the model's own `AsyncOpenAI` client (its base URL, key and headers).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

from ..errors import NighthawkError
from .batch_backend import FIND_SKEW_S, BatchState, Line, LineResult, error_body, listed
from .batch_records import Intent

__all__ = ["OpenAIBatches"]

_ENDPOINTS = ("/chat/completions", "/responses")
"""What a natural function's model sends that the Batch API also takes (it takes embeddings and completions too)."""


class OpenAIBatches:
    """`BatchBackend` for a provider speaking OpenAI's Batch API."""

    max_lines = 50_000
    max_bytes = 200_000_000

    def __init__(self, client: Any) -> None:
        self._client = client  # an `openai.AsyncOpenAI`
        self._base_path = client.base_url.path.rstrip("/")

    def endpoint(self, request: httpx2.Request) -> str:
        path = request.url.path
        suffix = path[len(self._base_path):] if path.startswith(self._base_path) else path
        if suffix not in _ENDPOINTS:
            raise NighthawkError(
                f"the OpenAI Batch API cannot carry a request to {path!r}: a batch map sends only Chat "
                "Completions or Responses requests (`openai-chat:` or `openai-responses:` models)"
            )
        return "/v1" + suffix

    def line_size(self, line: Line) -> int:
        return len(_line(line))

    async def probe(self) -> None:
        # The first entry of the batch list (the SDK retries it as it would a model request); its answer is not
        # read: a compatible server may list nothing.
        await self._client.get("/batches", cast_to=httpx2.Response, options={"params": {"limit": 1}})

    async def submit(self, endpoint: str, lines: list[Line], intent: Intent) -> str:
        data = b"".join(_line(line) for line in lines)
        uploaded = await self._client.files.create(file=("nighthawk-batch.jsonl", data), purpose="batch")
        batch = await self._client.batches.create(
            input_file_id=uploaded.id,
            endpoint=endpoint,
            completion_window="24h",
            metadata={"nighthawk_map": intent.map_key[:64], "nighthawk_intent": intent.marker},
        )
        return str(batch.id)

    async def find(self, intent: Intent, known: set[str]) -> str | None:
        """The batch whose metadata carries the intent's marker, among those made since the intent.

        Raises:
            UnreadableList: A page of the list is not one (read as JSON here: the SDK would make an empty
                page of it, which would read as "no batch").
        """
        after: str | None = None
        while True:
            params = {"limit": 100} if after is None else {"limit": 100, "after": after}
            raw = await self._client.get("/batches", cast_to=httpx2.Response, options={"params": params})
            batches, more = listed(raw, {"id": str, "created_at": (int, float)})
            for batch in batches:
                if batch["created_at"] < intent.created - FIND_SKEW_S:
                    return None  # newest first: the rest are older still
                if (batch.get("metadata") or {}).get("nighthawk_intent") == intent.marker and batch["id"] not in known:
                    return str(batch["id"])
            if not more:
                return None
            after = batches[-1]["id"]

    def response(self, request_body: bytes, result: LineResult) -> tuple[dict[str, str], bytes]:
        return {"content-type": "application/json"}, result.body

    async def state(self, batch_id: str) -> BatchState:
        return _state(await self._client.batches.retrieve(batch_id))

    async def results(self, state: BatchState) -> dict[str, LineResult]:
        batch = await self._client.batches.retrieve(state.id)
        answers: dict[str, LineResult] = {}
        for file_id in (batch.error_file_id, batch.output_file_id):  # an output line wins over an error line
            if not file_id:
                continue
            content = await self._client.files.content(file_id)
            for text in content.content.splitlines():
                if text.strip():
                    custom_id, result = _result(json.loads(text))
                    answers[custom_id] = result
        return answers

    async def cancel(self, batch_id: str) -> BatchState:
        return _state(await self._client.batches.cancel(batch_id))


def _line(line: Line) -> bytes:
    # The body goes in as the SDK serialised it, byte for byte (JSON on one line).
    head = json.dumps({"custom_id": line.custom_id, "method": "POST", "url": line.endpoint})
    return head[:-1].encode() + b', "body": ' + line.body + b"}\n"


def _state(batch: Any) -> BatchState:
    counts = batch.request_counts
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    problem = "; ".join(str(getattr(error, "message", error)) for error in errors)
    return BatchState(
        id=str(batch.id),
        status=str(batch.status),
        ended=batch.status in ("completed", "failed", "expired", "cancelled"),
        completed=counts.completed if counts else 0,
        failed=counts.failed if counts else 0,
        total=counts.total if counts else 0,
        problem=problem,
    )


def _result(line: dict[str, Any]) -> tuple[str, LineResult]:
    """One output or error line: its answer as the HTTP response a direct request would have got."""
    response = line.get("response") or {}
    if response.get("body") is not None:
        return line["custom_id"], LineResult(int(response.get("status_code") or 200), json.dumps(response["body"]).encode())
    error = line.get("error") or {}
    message = error.get("message") or "the batch line failed"
    return line["custom_id"], LineResult(int(response.get("status_code") or 500), error_body(message))
