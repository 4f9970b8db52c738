"""How long a map waits before it tries again an item whose request failed in a way that passes by itself."""

from __future__ import annotations

__all__ = ["retry_wait"]

RATE_LIMIT_WAIT_S = 1.0
"""The wait when a 429 names none."""
PASSING_WAIT_S = 0.5
"""The wait after another failure that passes (a 5xx, a timeout) when it names none (the SDKs' first)."""
LONGEST_WAIT_S = 120.0
"""A longer `Retry-After` is capped: the map keeps going (and an interrupt still stops it at once)."""


def retry_wait(error: BaseException) -> float:
    """Seconds to wait after `error` (`stopping.request_failure` says it passes): what the provider asked in a
    `retry-after-ms` or `retry-after` header of an answer in `error`'s causes (capped), else the default
    for a 429 or for any other failure."""
    seen: set[int] = set()
    current: BaseException | None = error
    limited = False
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        status = getattr(current, "status_code", None)
        if isinstance(status, int):
            limited = limited or status == 429
            wait = _header_wait(getattr(current, "response", None))
            if wait is not None:
                return min(wait, LONGEST_WAIT_S)
        current = current.__cause__ or current.__context__
    return RATE_LIMIT_WAIT_S if limited else PASSING_WAIT_S


def _header_wait(response: object) -> float | None:
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(float(value) * scale, 0.0)
        except ValueError:  # an HTTP date: wait the default
            return None
    return None
