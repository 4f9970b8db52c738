"""What a provider's Batch API is to a batch map's collector (`batch_rounds`): the lines a batch carries, how
the provider describes a batch and answers a line, the calls a backend makes (`BatchBackend`, implemented by
`openai_batches` and `anthropic_batches`), and what either may raise: a submission that failed
(`NotSubmitted`), a batch list that cannot be read (`UnreadableList`, from `listed`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2

from .batch_records import Intent

__all__ = [
    "BATCH_ENDED", "FIND_SKEW_S", "BatchBackend", "BatchState", "Line", "LineResult", "NotSubmitted", "UnreadableList",
    "error_body", "listed",
]

FIND_SKEW_S = 120.0
"""How much earlier than a local intent a provider's clock may date the batch it made for it."""


class NotSubmitted(Exception):
    """A batch could not be submitted (the upload or the batch's creation was refused, or never reached the
    provider): each of its requests fails with this, its cause the provider's own error, and was not sent.
    The map's early stop (`stopping`) reads the cause as it reads a direct request's."""


class UnreadableList(Exception):
    """The provider answered a look at its batch list with something that is not one (a proxy's page, an older
    compatible server): nothing can be concluded from it, least of all that no batch was made."""


def listed(answer: httpx2.Response, fields: dict[str, type | tuple[type, ...]]) -> tuple[list[dict[str, Any]], bool]:
    """The batches of one page of a provider's batch list (`{"data": [...], "has_more": ...}`, read here as
    JSON: the SDK would make an empty page of an answer that is not one), each with `fields` of those types,
    and whether more pages follow.

    Raises:
        UnreadableList: The page, or a batch on it, is not shaped so.
    """
    try:
        page = answer.json()
    except ValueError as exc:
        raise UnreadableList(f"the answer is not JSON: {answer.text[:120]!r}") from exc
    data = page.get("data") if isinstance(page, dict) else None
    if not isinstance(data, list):
        raise UnreadableList(f"the answer is not a list of batches: {str(page)[:120]!r}")
    for batch in data:
        if not isinstance(batch, dict) or not all(isinstance(batch.get(name), kind) for name, kind in fields.items()):
            raise UnreadableList(f"an entry of the list is not a batch: {str(batch)[:120]!r}")
    more = page.get("has_more", False)
    if more and not data:
        raise UnreadableList("the list says more batches follow but shows none")
    return data, bool(more)


@dataclass(frozen=True)
class Line:
    """One request of a batch."""

    custom_id: str
    endpoint: str
    """The provider's endpoint path, for example `/v1/chat/completions`."""
    body: bytes
    """The request body exactly as the SDK made it (JSON on one line)."""


@dataclass(frozen=True)
class LineResult:
    """How the provider answered one line: an HTTP status and body, as a direct request would have."""

    status_code: int
    body: bytes


@dataclass
class BatchState:
    """A batch as its provider last described it."""

    id: str
    status: str
    """The provider's own word (OpenAI: validating, in_progress, finalizing, completed, failed, expired, ...)."""
    ended: bool
    completed: int = 0
    failed: int = 0
    total: int = 0
    problem: str = ""
    """Why the whole batch failed, when it did."""


class BatchBackend(Protocol):
    """One provider's batch API."""

    max_lines: int
    max_bytes: int

    def endpoint(self, request: httpx2.Request) -> str:
        """The batch endpoint for a direct request; raises `NighthawkError` for one it has none for."""
        ...

    def line_size(self, line: Line) -> int: ...

    async def probe(self) -> None:
        """Ask the provider something that costs nothing, with the address and key the batches will use; raises
        what the SDK raises when that fails."""
        ...

    async def submit(self, endpoint: str, lines: list[Line], intent: Intent) -> str:
        """Upload and start a batch; its id."""
        ...

    async def find(self, intent: Intent, known: set[str]) -> str | None:
        """The id of the batch the provider made for `intent`, if it made one (none of `known`)."""
        ...

    def response(self, request_body: bytes, result: LineResult) -> tuple[dict[str, str], bytes]:
        """The headers and content the SDK reads as the answer to its request."""
        ...

    async def state(self, batch_id: str) -> BatchState: ...

    async def results(self, state: BatchState) -> dict[str, LineResult]:
        """The answers of an ended batch by `custom_id` (lines it did not run are missing)."""
        ...

    async def cancel(self, batch_id: str) -> BatchState: ...


BATCH_ENDED = "batch_ended"
"""The error type of a line whose batch ended (expired, failed, cancelled) before it ran: every line of that
batch fails alike and at once, so a map reports it per item rather than stopping (nothing is left to save)."""


def error_body(message: str, *, kind: str = "batch_error") -> bytes:
    """An error answer's body, as OpenAI's and Anthropic's SDKs both read it (`error.message`)."""
    return json.dumps({"type": "error", "error": {"message": message, "type": kind, "code": None}}).encode()
