"""A direct map sends its first request while its later items are still to be prepared: items are prepared as
they start, a few at a time, not all of them before the first request goes out.

The order of events is recorded, not their times: each item's preparation reads its argument into the prompt
(`Text.__str__` records it), and the local server records the first request's arrival.
"""

from __future__ import annotations

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from support.batch_server import BatchServer
from support.openai_server import RecordedRequest, ScriptItem, Status
from support.shouting_map import executor, shout

pytestmark = [pytest.mark.usefixtures("fresh_session_store"), pytest.mark.timeout(180)]

ITEMS = 1_000

events: list[tuple[str, str]] = []
"""`("prepared", text)` as an item's prompt reads its argument; `("request", "")` as the server gets one."""


class Text(str):
    """An item's argument that records when the item's prompt is made from it."""

    __slots__ = ()

    def __str__(self) -> str:
        events.append(("prepared", str.__str__(self)))
        return str.__str__(self)


def refuse(request: RecordedRequest) -> ScriptItem:
    """Record the request and refuse the key: the map stops at its first answer, whatever was prepared by then."""
    events.append(("request", ""))
    return Status(401, "invalid key", should_retry=False)


def test_the_first_request_of_a_map_of_a_thousand_at_once_goes_out_before_its_last_item_is_prepared(monkeypatch):
    monkeypatch.setenv("NIGHTHAWK_TOKENIZER", "estimate")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    events.clear()
    with BatchServer(refuse, lifetime=150.0) as server, override_allow_model_requests(True):
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        with nh.run(executor()), pytest.raises(nh.MapItemError):
            nh.map(shout, [Text(f"word {n}") for n in range(ITEMS)], concurrency=ITEMS, progress=False)

    kinds = [kind for kind, _ in events]
    assert "request" in kinds
    prepared_before = {text for kind, text in events[: kinds.index("request")] if kind == "prepared"}
    assert 0 < len(prepared_before) < ITEMS
