"""When a map stops by itself: its model requests keep failing for a reason that is not about the item.

Nothing listening at the provider's address, a host name that does not resolve, a key the provider refuses
(401/403) or a model or address it does not know (404) fail every item the same way: one such failure
stops the map. Failures that pass by themselves (a 429, a 5xx, a 408 or 409, a timeout, a connection that
broke: the provider's weather) stop nothing at first: the map slows down and tries the item again, whatever `retries` and the
SDK's `max_retries` say, and stops only when no item has succeeded for `give_up_after_s` seconds of such
failures; an item failing so for that long on its own (others succeed) fails. Any other failure of the
model request (HTTP 400, a malformed answer) stops the map when `CONSECUTIVE_FAILURES` items in a row, in
the order they end, failed with the same one.
Failures that are about the item (the model's `raise` outcome, an invalid outcome, the user's code, a
prompt too long for the context window) never stop a map and break a run of request failures; nor does a
provider batch that ended before answering (`batch_api=True`): its lines all failed at once, so stopping
would save nothing, and each item says why. A batch map's request whose batch could not be submitted
(`batch_backend.NotSubmitted`) is judged by the submission's own failure: a refused upload stops the map as a
refused direct request does.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CONSECUTIVE_FAILURES", "GIVE_UP_AFTER_S", "CommonCause", "RequestFailure", "causes", "request_failure"]

CONSECUTIVE_FAILURES = 5
"""Items in a row whose model request failed the same way (the same HTTP status, a timeout, ...) that stop
a map."""

GIVE_UP_AFTER_S = 60.0
"""Seconds of failures that pass by themselves (429, 5xx, timeouts) without any item succeeding after which a
map stops (`nighthawk.map(give_up_after_s=...)`)."""

_BROKEN_CONNECTIONS = {"APIConnectionError", "RemoteProtocolError", "ReadError", "WriteError"}
"""A connection that was made, then broke (a provider's SDK or HTTP client names it so): it passes, as a 5xx."""

_PASSING_STATUSES = {408, 409, 429}
"""Besides every 5xx: statuses that say "not now" (as the OpenAI and Anthropic SDKs read them)."""

_REFUSALS = {
    401: "the provider refuses the API key (HTTP 401)",
    403: "the API key may not use this model or endpoint (HTTP 403)",
    404: "the provider knows no such model or address (HTTP 404)",
}


@dataclass(frozen=True)
class RequestFailure:
    """How an item's model request failed."""

    kind: str
    """What failed, as a map's stop message names it (`HTTP 500`, `connection refused`, ...)."""
    common: bool
    """Whether it fails every item alike (no connection, no such model, a refused key): the map stops at once."""
    passing: bool = False
    """Whether it passes by itself (a rate limit, a server error, a timeout): the map slows down and tries again."""


def request_failure(error: BaseException) -> RequestFailure | None:
    """How the model request behind `error` (an item's failure) failed, or `None` when `error` is not a failed
    model request (it is about the item), judged from its chain of causes."""
    chain = causes(error)
    api = _model_api_error()
    failed = next((index for index, cause in enumerate(chain) if _request_error(cause, api)), None)
    if failed is None:
        return None
    below = chain[failed:]  # only what the request raised: an item's own network calls say nothing of the provider
    if any(type(cause).__name__ == "ModelContextWindowExceededError" for cause in below):
        return None  # this item's prompt is too long: another may fit
    if any(_error_type(cause) == "batch_ended" for cause in below):
        return None
    # A batch map's request that was never sent because its batch could not be submitted: the submission's
    # own failure (below it in the chain) says why, as a direct request's would.
    submitted = "" if not any(type(cause).__name__ == "NotSubmitted" for cause in below) else "the batch could not be submitted: "
    for cause in below:
        status = getattr(cause, "status_code", None)
        if isinstance(status, int):
            return RequestFailure(
                submitted + _REFUSALS.get(status, f"HTTP {status}"),
                common=status in _REFUSALS,
                passing=status in _PASSING_STATUSES or status >= 500,
            )
        if isinstance(cause, ConnectionRefusedError):
            return RequestFailure(submitted + "nothing listens at the provider's address (connection refused)", common=True)
        if isinstance(cause, socket.gaierror):
            return RequestFailure(submitted + "the provider's host name does not resolve (DNS failure)", common=True)
    if any(isinstance(cause, TimeoutError) or "Timeout" in type(cause).__name__ for cause in below):
        return RequestFailure("the request timed out", common=False, passing=True)
    if any(isinstance(cause, ConnectionError) or type(cause).__name__ in _BROKEN_CONNECTIONS for cause in below):
        return RequestFailure("the connection broke before the answer", common=False, passing=True)
    return RequestFailure(f"{type(below[-1]).__name__}: {below[-1]}".splitlines()[0][:200], common=False)


def _request_error(cause: BaseException, api: type[BaseException] | None) -> bool:
    """Whether `cause` is a model request's failure: pydantic-ai's, or a batch map's request whose batch could
    not be submitted (`batch_backend.NotSubmitted`, named here so this module loads no HTTP client)."""
    return api is not None and isinstance(cause, api) or type(cause).__name__ == "NotSubmitted"


def _error_type(cause: BaseException) -> object:
    """The provider's error type in an HTTP error's body (`{"error": {"type": ...}}` or its inner part)."""
    body = getattr(cause, "body", None)
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    return (inner if isinstance(inner, dict) else body).get("type")


def causes(error: BaseException) -> list[BaseException]:
    """`error`, then what caused it (`__cause__`, else `__context__`), and so on, each once."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _model_api_error() -> type[BaseException] | None:
    try:
        from pydantic_ai.exceptions import ModelAPIError  # loaded already by any step that sent a request
    except ImportError:  # pragma: no cover - pydantic-ai is a dependency
        return None
    return ModelAPIError


class CommonCause:
    """Follows a map's items as they end and says when the map must stop (`failed` returns the reason).

    Args:
        give_up_after_s: Seconds of passing failures without any item succeeding that stop the map.
        clock: Seconds, monotonic (a test's own).
    """

    def __init__(
        self, consecutive: int = CONSECUTIVE_FAILURES, *, give_up_after_s: float = GIVE_UP_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.consecutive = consecutive
        self.give_up_after_s = give_up_after_s
        self._clock = clock
        self._streak: list[str] = []
        self._by_kind: dict[str, int] = {}
        self._failing_since: float | None = None
        """When the first failure that passes since the last success came (slow items alone stop nothing)."""
        self._item_failing_since: dict[int, float] = {}

    def succeeded(self, index: int | None = None) -> None:
        self._streak.clear()
        self._failing_since = None
        self._item_failing_since.pop(index, None)

    def passing(self, error: BaseException, index: int) -> bool:
        """Whether `error` (item `index`'s) passes by itself and the item may be tried again for it: until the
        item has failed so for `give_up_after_s` (after that it fails as any other item does)."""
        failure = request_failure(error)
        if failure is None or not failure.passing:
            return False
        now = self._clock()
        self._failing_since = now if self._failing_since is None else self._failing_since
        if index not in self._item_failing_since:
            self._item_failing_since[index] = now
            self._by_kind[failure.kind] = self._by_kind.get(failure.kind, 0) + 1  # items, not attempts
        return now - self._item_failing_since[index] < self.give_up_after_s

    def failed(self, error: BaseException, *, final: bool) -> str | None:
        """Note an item's failure; the cause that stops the map, if it does now. A failure that is not `final`
        (the item will be tried again: a failure that passes, or `retries` left) stops the map only if its
        cause is common, or if it passes and no item has succeeded for `give_up_after_s`."""
        failure = request_failure(error)
        if failure is None:
            if final:
                self._streak.clear()
            return None
        if failure.common:
            self._by_kind[failure.kind] = self._by_kind.get(failure.kind, 0) + 1
            return failure.kind
        if failure.passing:  # counted by `passing`, which the map asked first
            waited = 0.0 if self._failing_since is None else self._clock() - self._failing_since
            if waited >= self.give_up_after_s:
                return (
                    f"no item succeeded in {waited:.0f} s of failures that usually pass ({failure.kind}; "
                    f"give_up_after_s={self.give_up_after_s:g})"
                )
        if not final:
            return None
        if not failure.passing:
            self._by_kind[failure.kind] = self._by_kind.get(failure.kind, 0) + 1
        if self._streak and self._streak[-1] != failure.kind:
            self._streak.clear()
        self._streak.append(failure.kind)
        if len(self._streak) >= self.consecutive:
            return f"{len(self._streak)} items in a row failed the same way: {failure.kind}"
        return None

    def affected(self, error: BaseException) -> int:
        """How many items of the map failed the way `error` did."""
        failure = request_failure(error)
        return 0 if failure is None else self._by_kind.get(failure.kind, 0)
