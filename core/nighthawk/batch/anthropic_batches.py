"""Anthropic's Message Batches API: the lines of a batch posted to `/v1/messages/batches`, polled, and its
results (a JSONL in no promised order, matched by `custom_id`) read back.

pydantic-ai streams its Anthropic requests behind the scenes (its default `max_tokens` is the model's whole
output, too long for the SDK to wait on one plain response). A batch does not stream: each line's `params`
are the request body the SDK made, key for key, without its `"stream"` member, and the line's answer (a whole
message) goes back to the SDK as the event stream the direct request would have read. The batch itself is
managed through the model's own `AsyncAnthropic` client (its base URL, key and headers); beta features the
request asked for (`anthropic-beta`) are asked for on the batch.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import httpx2

from ..errors import NighthawkError
from .batch_backend import BATCH_ENDED, FIND_SKEW_S, BatchState, Line, LineResult, UnreadableList, error_body, listed
from .batch_records import Intent

__all__ = ["AnthropicBatches"]

_MESSAGES = "/v1/messages"

_STATUS_OF_ERROR = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
"""The HTTP status a direct request would have got for an `errored` line's error type."""


class AnthropicBatches:
    """`BatchBackend` for Anthropic's Message Batches API."""

    max_lines = 100_000
    max_bytes = 256_000_000

    def __init__(self, client: Any) -> None:
        self._client = client  # an `anthropic.AsyncAnthropic`

    def endpoint(self, request: httpx2.Request) -> str:
        if not request.url.path.endswith(_MESSAGES):
            raise NighthawkError(
                f"Anthropic's Message Batches API cannot carry a request to {request.url.path!r}: a batch map sends "
                "only Messages API requests"
            )
        betas = request.headers.get("anthropic-beta")
        return f"{_MESSAGES}?betas={betas}" if betas else _MESSAGES

    def line_size(self, line: Line) -> int:
        return len(line.body) + len(line.custom_id) + 32

    async def probe(self) -> None:
        # The first entry of the batch list (the SDK retries it as it would a model request); its answer is not read.
        await self._client.get("/v1/messages/batches", cast_to=httpx2.Response, options={"params": {"limit": 1}})

    async def submit(self, endpoint: str, lines: list[Line], intent: Intent) -> str:
        requests = [{"custom_id": line.custom_id, "params": _params(line.body)} for line in lines]
        betas = _betas(endpoint)
        if betas:
            batch = await self._client.beta.messages.batches.create(requests=requests, betas=betas)
        else:
            batch = await self._client.messages.batches.create(requests=requests)
        return str(batch.id)

    async def find(self, intent: Intent, known: set[str]) -> str | None:
        """A batch made for `intent` that no record names: Message Batches carry no metadata, so the newest
        batch made since the intent with as many requests (and not recorded for another) is taken for it; its
        results are matched by `custom_id` all the same."""
        after: str | None = None
        while True:
            params = {"limit": 100} if after is None else {"limit": 100, "after_id": after}
            raw = await self._client.get("/v1/messages/batches", cast_to=httpx2.Response, options={"params": params})
            batches, more = listed(raw, {"id": str, "created_at": str, "request_counts": dict})
            for batch in batches:
                try:
                    made = _seconds(batch["created_at"])
                    total = sum(int(batch["request_counts"][kind]) for kind in ("processing", "succeeded", "errored", "canceled", "expired"))
                except (KeyError, TypeError, ValueError) as exc:
                    raise UnreadableList(f"an entry of the list is not a batch: {str(batch)[:120]!r}") from exc
                if made < intent.created - FIND_SKEW_S:
                    return None  # newest first: the rest are older still
                if batch["id"] not in known and total == len(intent.custom_ids):
                    return str(batch["id"])
            if not more:
                return None
            after = batches[-1]["id"]

    async def state(self, batch_id: str) -> BatchState:
        return _state(await self._client.messages.batches.retrieve(batch_id))

    async def results(self, state: BatchState) -> dict[str, LineResult]:
        batch = await self._client.messages.batches.retrieve(state.id)
        if not batch.results_url:
            return {}
        raw = await self._client.get(batch.results_url, cast_to=httpx2.Response, options={"headers": {"Accept": "application/binary"}})
        answers: dict[str, LineResult] = {}
        for text in raw.content.splitlines():
            if text.strip():
                line = json.loads(text)
                answers[line["custom_id"]] = _result(state.id, line["result"])
        return answers

    async def cancel(self, batch_id: str) -> BatchState:
        return _state(await self._client.messages.batches.cancel(batch_id))

    def response(self, request_body: bytes, result: LineResult) -> tuple[dict[str, str], bytes]:
        """The headers and content a direct request would have read for this answer."""
        if result.status_code < 400 and json.loads(request_body).get("stream"):
            return {"content-type": "text/event-stream"}, _event_stream(json.loads(result.body))
        return {"content-type": "application/json"}, result.body


def _params(body: bytes) -> dict[str, Any]:
    params = json.loads(body)
    params.pop("stream", None)  # a batch line is answered whole
    return params


def _betas(endpoint: str) -> list[str]:
    _, _, betas = endpoint.partition("?betas=")
    return [beta for beta in betas.split(",") if beta]


def _seconds(moment: datetime | str) -> float:
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    return moment.timestamp()


def _state(batch: Any) -> BatchState:
    counts = batch.request_counts
    unanswered = counts.canceled + counts.expired
    return BatchState(
        id=str(batch.id),
        status=str(batch.processing_status),
        ended=batch.processing_status == "ended",
        completed=counts.succeeded,
        failed=counts.errored + unanswered,
        total=counts.processing + counts.succeeded + counts.errored + unanswered,
    )


def _result(batch_id: str, result: dict[str, Any]) -> LineResult:
    """One result line as the HTTP answer a direct request would have got."""
    kind = result.get("type")
    if kind == "succeeded":
        return LineResult(200, json.dumps(result["message"]).encode())
    if kind == "errored":
        error = (result.get("error") or {}).get("error") or {}
        message = f"batch {batch_id}: {error.get('message') or 'the request failed'}"
        return LineResult(_STATUS_OF_ERROR.get(str(error.get("type")), 500), error_body(message))
    return LineResult(500, error_body(f"batch {batch_id} ended with this request {kind} before it ran", kind=BATCH_ENDED))


def _event_stream(message: dict[str, Any]) -> bytes:
    """A whole message as the server-sent events of a streamed answer (one delta per content block)."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message, "content": [], "stop_reason": None, "stop_sequence": None}}
    ]
    for index, block in enumerate(message.get("content") or []):
        kind = block.get("type")
        if kind == "text":
            start, deltas = {**block, "text": ""}, [{"type": "text_delta", "text": block["text"]}]
        elif kind == "tool_use":
            start, deltas = {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        elif kind == "thinking":
            start = {**block, "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]}, {"type": "signature_delta", "signature": block["signature"]}]
        else:  # a block that arrives whole in a stream too (redacted thinking, server tool results)
            start, deltas = block, []
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas]
        events.append({"type": "content_block_stop", "index": index})
    delta = {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}
    events += [{"type": "message_delta", "delta": delta, "usage": message.get("usage") or {}}, {"type": "message_stop"}]
    return b"".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events)
