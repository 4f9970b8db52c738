"""Finding the stored request nearest to one the store has no answer for, to show what changed."""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Iterable, Mapping
from typing import Any

from ._canonical import outline_of
from ._format import Exchange
from ._yaml import to_yaml

__all__ = ["nearest_exchange"]

_NEAREST_FINALISTS = 12
"""How many candidates a miss compares line by line."""


def nearest_exchange(
    candidates: Iterable[Exchange], request: Mapping[str, Any], *, block: str | None = None, round_: int | None = None
) -> Exchange | None:
    """The exchange among `candidates` whose request reads most like `request`, preferring the same block
    and round.

    Only a few candidates, ranked first by which top-level fields are equal and how close the size of the
    messages is, are compared line by line, so a miss stays quick in a store of thousands of entries.
    """
    exchanges = list(candidates)
    pool = [exchange for exchange in exchanges if block is not None and exchange.block == block] or exchanges
    pool = [exchange for exchange in pool if exchange.round == round_] or pool
    if not pool:
        return None
    wanted_fields, wanted_size = outline_of(request)

    def outline_rank(exchange: Exchange) -> tuple[int, int]:
        fields_, size = exchange._outline
        return (-len(fields_ & wanted_fields), abs(size - wanted_size))

    finalists = heapq.nsmallest(_NEAREST_FINALISTS, pool, key=outline_rank)
    wanted = to_yaml(dict(request)).splitlines()

    def similarity(exchange: Exchange) -> float:
        stored = to_yaml(dict(exchange.request)).splitlines()
        return difflib.SequenceMatcher(None, wanted, stored, autojunk=False).ratio()

    return max(finalists, key=similarity)
