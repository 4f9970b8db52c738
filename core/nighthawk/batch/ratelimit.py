"""Telling a provider's "too many requests" apart from other failures, and how long it asked to wait."""

from __future__ import annotations

__all__ = ["rate_limit_wait"]

DEFAULT_WAIT_S = 1.0
"""The wait when a 429 names none."""
LONGEST_WAIT_S = 120.0
"""A longer `Retry-After` is capped: the map keeps going (and an interrupt still stops it at once)."""


def rate_limit_wait(error: BaseException) -> float | None:
    """Seconds the provider asked to wait when `error` (or an exception it was raised from) is a 429,
    from its `retry-after-ms` or `retry-after` header; `None` for any other failure."""
    seen: set[int] = set()
    current: BaseException | None = error
    limited = False
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if getattr(current, "status_code", None) == 429:
            limited = True
            wait = _header_wait(getattr(current, "response", None))
            if wait is not None:
                return min(wait, LONGEST_WAIT_S)
        current = current.__cause__ or current.__context__
    return DEFAULT_WAIT_S if limited else None


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
