"""A batch-API map's rounds: the model requests its items send are gathered and answered by provider batches.

The provider's SDK client of the map's model gets an HTTP transport (`BatchTransport`) that, instead of sending
a request, hands its body, exactly as the SDK made it, to the `Collector` and waits for the batch line that
answers it; the answer is returned as the HTTP response the SDK would have read, so pydantic-ai parses
usage and tool calls as usual.

The collector gathers the requests that arrive while the map's items run up to the model, and submits them as
one batch once the round is complete: every item in flight waits on the provider (on this batch or on one
still running) and the map starts no more (`driver.Flight`); it is split at the provider's limits. Answers of
a batch that ended and are still being handed back count as coming: their items will send their next
requests, which join the same batch. Only when the map cannot tell (an item busy in its own code, or paused by
a rate limit) does the gathering end after `GATHER_S` without a new request. A quiet moment alone does not end
it: a busy machine leaves half-second gaps between the requests of a round (a 2,000-item map made 13-15
batches of 1, 2, 578, 210, ... when half a second of quiet ended each). An item that needs another round (tool
calls, then its outcome) sends its next request once its batch has ended, and so joins the next batch.

A provider that refuses the map is told early, at two points. Before the items start, one request that costs
nothing (`BatchBackend.probe`) checks that the provider can be reached and takes the key: if not, the map stops
before any item runs, naming the cause; no batch goes out before that request has been answered. Then, in a
map with more than `ALONE_FIRST_ABOVE` items at once (`alone_first`), until the provider has taken one of its
batches (`opened`), each request goes out alone, at once, and the map runs one item at a time
(`driver.Opening`): an upload or a batch the provider refuses (a key that may not upload, a compatible server
that answers 404 for a model it does not know) stops the map after that one request, and any later request
fails with the same refusal without being uploaded. Gathering first would have told it only once every item
had made its request: seconds for a thousand items, whose first requests all reach the collector together (a
few dozen items gather in well under a second, so a smaller map sends its first round as one batch). A
submission failing for a passing reason (a 500, a timeout) opens the map as a taken batch does. That batch of
one adds one batch to the first round; its item may then run ahead of the others, its later rounds in batches
of their own.

A request's `custom_id` is a hash of its endpoint and body, with how many times the same body was sent
before in this map (a retried item sends its first request again, and must get a new answer). So the same map
run again (after an interrupt, a restart, a dead process) makes the same ids, and a request already in a batch
recorded in the map's store waits on that batch instead of being sent again. Before a batch is made, its
lines are recorded as an `Intent` with a marker of its own: a run interrupted after the provider made the
batch but before its id came back leaves the intent, and the next run asks the provider for the batch made
for it (`BatchBackend.find`) before sending anything. The batches an earlier run left running are followed from
the start (`adopt_running`), and nothing new is submitted before each was looked at once (and, if it had ended,
its answers handed back): after a restart, the answers waiting at the provider come back first, and their items'
next requests join the first new batch (1,999 ready answers had waited ~24 s behind one new request sent alone).
Such a map does not send its first request alone either: the provider has taken its batches before.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

from .batch_backend import BATCH_ENDED, BatchBackend, BatchState, Line, LineResult, NotSubmitted, error_body
from .batch_records import BatchRecords, Intent
from .driver import Flight
from .stopping import causes, request_failure

__all__ = [
    "ALONE_FIRST_ABOVE", "FAIL_LATER_S", "GATHER_S", "HAND_BACK_SLICE", "PROBE_TIMEOUT_S", "PROBE_WAIT_S", "ROUND_CHECK_S",
    "BatchTransport", "Collector", "counted_requests",
]

ALONE_FIRST_ABOVE = 32
"""Items at once above which a batch map sends its first request alone (module note)."""

GATHER_S = 5.0
"""Seconds without a new request after which the requests gathered go out as a batch, when the map cannot
tell that its round is complete (module note)."""

ROUND_CHECK_S = 0.1
"""Seconds between two looks at whether the round gathered is complete."""

FAIL_LATER_S = 0.5
"""Seconds after which the requests of a refused batch fail, but the first (`Collector._fail_all`)."""

HAND_BACK_SLICE = 25
"""Answers of an ended batch handed back to their items at a time (see `Collector._hand_back`)."""

_SAY_EVERY_S = 0.25
"""Shortest time between two reports of how far the answers of a batch were handed back."""

PROBE_WAIT_S = 5.0
"""Seconds a batch map waits for the provider's first answer (`Collector.check_access`) before its items start
(read when it waits)."""

PROBE_TIMEOUT_S = 30.0
"""Seconds after which that first question counts as unanswered (it then stops nothing)."""

@dataclass
class _Batch:
    id: str
    custom_ids: frozenset[str]
    watcher: asyncio.Task[None] | None = None
    state: BatchState | None = None
    unanswered: int = 0
    """Lines whose answers have not been handed back yet."""
    looked: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the batch was seen running, or once it ended and its answers were handed back."""


@dataclass
class Collector:
    """Gathers a map's requests into batches and hands each its answer; lives on nighthawk's background loop."""

    backend: BatchBackend
    records: BatchRecords
    map_key: str
    show: Callable[[str], None]
    """Called with a line saying how the batches stand, from the background loop."""
    unbilled: Callable[[int], None] = lambda lines: None
    """Called with how many lines of the batches followed have no answer back yet, from the background loop:
    the provider bills them, and the map's usage counts them only once their answers are read."""
    gather_s: float = GATHER_S
    flight: Flight | None = None
    """The map's items in flight (`None`: unknown; a round then ends only after `gather_s` of quiet)."""
    poll_s: float = 10.0
    max_poll_s: float = 60.0
    pending: list[Line] = field(default_factory=list)
    results: dict[str, LineResult] = field(default_factory=dict)
    batches: dict[str, _Batch] = field(default_factory=dict)
    _waiting: dict[str, list[asyncio.Future[LineResult]]] = field(default_factory=dict)
    _sent: Counter[str] = field(default_factory=Counter)
    _flush: asyncio.TimerHandle | None = None
    _last_request: float = 0.0
    """When the last request was gathered (the loop's clock)."""
    _held: int = 0
    """Requests of the map's items waiting here for their answer."""
    _reading_back: list[_Batch] = field(default_factory=list)
    """The batches an earlier run left running: nothing new is submitted before each was looked at once."""
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _closing: asyncio.Task[None] | None = None
    _probe: asyncio.Task[None] | None = None
    _refusal: BaseException | None = None
    """Why no batch can be submitted, once the probe found it out (the provider's own error)."""
    _refusal_told: bool = False
    """Whether a request has failed for `_refusal` yet (the first fails at once, the others a moment later)."""
    _failing: list[asyncio.TimerHandle] = field(default_factory=list)
    """Failures handed out a moment later (`_fail_all`), cancelled when the collector closes."""
    alone_first: bool = False
    """Whether, until a batch of this map is taken, each request goes out alone, at once (module note)."""
    opened: Callable[[], None] = lambda: None
    """Called once no request need go out alone any more: the provider took a batch of this map, or failed
    one in a way that does not stop the map, or a request waits on a batch an earlier run recorded."""
    _opened: bool = False
    _alone: bool = False
    """Whether a request is going out alone (none has been taken or failed for a passing reason yet)."""
    _refused: tuple[str, BaseException] | None = None
    """Why a batch was refused in a way that stops the map (a key that may not upload, a model the provider
    does not know): every later request fails with it at once instead of being uploaded again."""
    requests: int = 0
    """Requests handed over by the map's items."""
    handing_back: dict[str, int] = field(default_factory=dict)
    """Ended batches whose answers are being handed back to their items: how many so far."""

    # --- requests ---------------------------------------------------------------------------------------

    async def answer(self, endpoint: str, body: bytes) -> LineResult:
        """Wait for the batch line that answers this request (already answered, in a recorded batch, or sent now)."""
        self.requests += 1
        digest = hashlib.sha256(endpoint.encode() + b"\n" + body).hexdigest()[:40]
        custom_id = f"nh-{digest}-{self._sent[digest]}"
        self._sent[digest] += 1
        if custom_id in self.results:
            return self.results[custom_id]
        future: asyncio.Future[LineResult] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(custom_id, []).append(future)
        self._held += 1
        try:
            return await self._answered(future, custom_id, endpoint, body)
        finally:
            self._held -= 1

    async def _answered(self, future: asyncio.Future[LineResult], custom_id: str, endpoint: str, body: bytes) -> LineResult:
        """`future`, once the line `custom_id` has its answer: failed at once, from a recorded batch, or sent."""
        if self._refusal is not None:
            self._fail_refused([custom_id])
            return await future
        if self._refused is not None:
            self._fail(custom_id, *self._refused)
            return await future
        recorded = self.records.batch_of(custom_id)
        if recorded is not None:
            self._watch(recorded, self.records.custom_ids(recorded))
            self._open()
        elif self.alone_first and not self._opened and not self._alone:
            self._alone = True
            self._spawn(self._submit_alone(Line(custom_id, endpoint, body)))
        else:
            self.pending.append(Line(custom_id, endpoint, body))
            self._schedule_flush()
        return await future

    def _schedule_flush(self) -> None:
        loop = asyncio.get_running_loop()
        self._last_request = loop.time()
        if len(self.pending) >= self.backend.max_lines or self._round_complete():
            self._submit_pending()
        elif self._flush is None:
            self._flush = loop.call_later(ROUND_CHECK_S, self._look_at_round)

    def _look_at_round(self) -> None:
        """Submit what was gathered once the round is complete (or quiet for `gather_s`), else look again soon."""
        self._flush = None
        if not self.pending:
            return
        loop = asyncio.get_running_loop()
        if self._round_complete() or loop.time() - self._last_request >= self.gather_s:
            self._submit_pending()
        else:
            self._flush = loop.call_later(ROUND_CHECK_S, self._look_at_round)

    def _round_complete(self) -> bool:
        """Whether every item of the map in flight waits here on a batch that has not ended, and no other item
        is about to start: no further request can come before one of those batches ends."""
        flight = self.flight
        if flight is None or flight.starting:
            return False
        coming = sum(batch.unanswered for batch in self.batches.values() if batch.state is not None and batch.state.ended)
        return self._held - coming >= flight.items

    def _submit_pending(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        lines, self.pending = self.pending, []
        for endpoint, chunk in _chunks(lines, self.backend):
            self._spawn(self._submit(endpoint, chunk))

    async def _submit_alone(self, line: Line) -> None:
        """Send `line` as a batch of its own (no request of this map has been taken yet)."""
        try:
            await self._submit(line.endpoint, [line])
        finally:
            self._alone = False

    def _open(self) -> None:
        if not self._opened:
            self._opened = True
            self.opened()

    async def check_access(self) -> None:
        """Ask the provider whether it can be reached and takes the key (`BatchBackend.probe`), and wait up to
        `PROBE_WAIT_S` for its answer (`refusal` tells it); a slower answer is waited for by the first
        submission instead, and a refusal then fails the requests gathered so far."""
        self._probe = self._spawn(self._check_access())
        await asyncio.wait([self._probe], timeout=PROBE_WAIT_S)

    def refusal(self) -> NotSubmitted | None:
        """Why no request of this map can be sent, if the provider's answer to `check_access` said so."""
        return None if self._refusal is None else _not_submitted(_REFUSED_AT_START, self._refusal)

    async def _check_access(self) -> None:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                await self.backend.probe()
        except Exception as exc:  # noqa: BLE001 - only a certain refusal stops the map; the rest the upload will tell
            if _first_status(exc) not in _ACCESS_REFUSED:
                return
            self._refusal = exc
            if self._flush is not None:
                self._flush.cancel()
                self._flush = None
            lines, self.pending = self.pending, []
            self._fail_refused([line.custom_id for line in lines])

    async def settle_intents(self, *, resubmit: bool = False) -> list[tuple[Intent, str]]:
        """Adopt the batches an earlier run had made but not recorded (interrupted while submitting), before
        any request of this run goes out; forget the intents the provider made nothing for. The intents whose
        lookup failed (an error, or an answer that cannot be read), with why: they are kept for a later run,
        unless `resubmit` (the user chose to send their requests again), when they are forgotten too."""
        failed: list[tuple[Intent, str]] = []
        for intent in self.records.intents(self.map_key):
            try:
                batch_id = await self.backend.find(intent, self.records.batch_ids())
            except Exception as exc:  # noqa: BLE001 - whatever the answer, nothing says no batch was made
                failed.append((intent, f"{type(exc).__name__}: {exc}"))
                if resubmit:
                    self.records.settle(intent, None)
                continue
            self.records.settle(intent, batch_id)
            if batch_id is not None:
                self.show(f"batch {batch_id} found (submitted by an interrupted run)")
        return failed

    async def adopt_running(self) -> int:
        """Follow at once the batches an earlier run of this map submitted and did not see end, so that answers
        waiting at the provider are read back before anything new is submitted (module note); how many."""
        for batch_id in self.records.running(self.map_key):
            self._watch(batch_id, self.records.custom_ids(batch_id))
            self._reading_back.append(self.batches[batch_id])
        return len(self._reading_back)

    async def _submit(self, endpoint: str, lines: list[Line]) -> None:
        if self._probe is not None:
            await self._probe
        for adopted in self._reading_back:
            await adopted.looked.wait()
        if self._refusal is not None:
            self._fail_refused([line.custom_id for line in lines])
            return
        requests = counted_requests(len(lines))
        self.show(f"submitting a batch of {requests}")
        intent = Intent.new(self.map_key, endpoint, [line.custom_id for line in lines])
        # Recorded before the batch is made: if this run stops before the provider's answer arrives, the next
        # one finds the batch by this intent instead of paying for it again.
        self.records.intend(intent)
        try:
            batch_id = await self.backend.submit(endpoint, lines, intent)
        except Exception as exc:  # noqa: BLE001 - every line of it fails, as its request would have
            status = _first_status(exc)
            if status is not None and status < 500:
                self.records.settle(intent, None)  # refused or never sent: no batch was made
            why = f"the batch of {requests} could not be submitted"
            self.show(f"{why}: {type(exc).__name__}")
            self._fail_all([line.custom_id for line in lines], why, exc)
            failure = request_failure(_not_submitted(why, exc))
            if failure is not None and failure.common:
                self._refused = why, exc  # the map stops on it: nothing later is uploaded to be refused again
            else:
                self._open()  # a passing failure (a 500, a timeout): the next batch may well go out
            return
        ids = frozenset(intent.custom_ids)
        self.records.settle(intent, batch_id)
        self.show(f"batch {batch_id} submitted ({requests})")
        self._watch(batch_id, ids)
        self._open()

    def _fail_refused(self, custom_ids: list[str]) -> None:
        """Fail requests because of the probe's refusal: the map's first such failure at once, the others later."""
        assert self._refusal is not None
        if custom_ids:
            self._fail_all(custom_ids, _REFUSED_AT_START, self._refusal, at_once=not self._refusal_told)
            self._refusal_told = True

    def _fail_all(self, custom_ids: list[str], why: str, cause: BaseException, *, at_once: bool = True) -> None:
        """Fail the requests `custom_ids`, never sent because of `cause`: the first at once (unless not
        `at_once`), the others a moment later. A cause every item shares (a refused key) then stops the map
        with the first, and the map cancels the others, instead of working through a thousand alike failures."""
        loop = asyncio.get_running_loop()
        for index, custom_id in enumerate(custom_ids):
            if index == 0 and at_once:
                self._fail(custom_id, why, cause)
            else:
                self._failing.append(loop.call_later(FAIL_LATER_S, self._fail, custom_id, why, cause))

    # --- batches ----------------------------------------------------------------------------------------

    def _watch(self, batch_id: str, custom_ids: frozenset[str]) -> None:
        if batch_id in self.batches:
            return
        batch = self.batches[batch_id] = _Batch(batch_id, custom_ids, unanswered=len(custom_ids))
        batch.watcher = self._spawn(self._follow(batch))
        self._tell_unbilled()

    def _answered_lines(self, batch: _Batch, count: int) -> None:
        batch.unanswered -= count
        self._tell_unbilled()

    def _tell_unbilled(self) -> None:
        self.unbilled(sum(batch.unanswered for batch in self.batches.values()))

    async def _follow(self, batch: _Batch) -> None:
        try:
            await self._follow_to_end(batch)
        finally:
            batch.looked.set()

    async def _follow_to_end(self, batch: _Batch) -> None:
        delay = 0.0
        try:
            while True:
                await asyncio.sleep(delay)
                state = batch.state = await self.backend.state(batch.id)
                self.show(self._standing(batch))
                if state.ended:
                    break
                batch.looked.set()
                delay = min(self.max_poll_s, max(self.poll_s, delay * 1.5))
            if state.completed or state.failed:
                self.show(f"batch {batch.id}: downloading results")
            answers = await self.backend.results(state)
        except Exception as exc:  # noqa: BLE001 - its lines fail, and a run after this one asks again
            failure = LineResult(502, error_body(f"batch {batch.id} could not be followed: {type(exc).__name__}: {exc}"))
            for custom_id in batch.custom_ids:
                self._resolve(custom_id, failure, keep=False)
            self._answered_lines(batch, batch.unanswered)
            return
        self.records.ended(batch.id, state.status)
        await self._hand_back(batch, answers, LineResult(500, error_body(_unrun_message(state), kind=BATCH_ENDED)))
        running = self.running()
        self.show(f"batch {batch.id} ended; {len(running)} running" if running else f"{len(self.batches)} batch(es) ended")

    def _standing(self, polled: _Batch) -> str:
        """How the biggest of `polled` and the other batches still running stands, and how many more run: one
        text for all, so that the polls of several batches (a big map's first one-line batch, a round split at
        the provider's limits) do not take turns on the map's one status line. One batch is spelled out: a
        provider's batch ids are long, and a line wider than the terminal cannot be redrawn in place."""
        assert polled.state is not None
        running = [batch.state for batch in self.batches.values() if batch is not polled and batch.state is not None and not batch.state.ended]
        first, *others = sorted([polled.state, *running], key=lambda state: -state.total)
        more = sum(not state.ended for state in others)
        return _described(first) + (f"; {more} more running" if more else "")

    async def _hand_back(self, batch: _Batch, answers: dict[str, LineResult], unrun: LineResult) -> None:
        """Give each line of an ended batch its answer (`unrun` for one the batch did not run), a slice at a time.

        Each slice's items go on (the model library reads their answers) before the next slice is handed over,
        so the loop never holds thousands of them queued at once: an interrupt's cancel, queued behind them,
        would wait for all. Meanwhile the map says how far it got.
        """
        ids = sorted(batch.custom_ids)
        self.handing_back[batch.id] = 0
        said = time.monotonic()
        for start in range(0, len(ids), HAND_BACK_SLICE):
            for custom_id in ids[start:start + HAND_BACK_SLICE]:
                self._resolve(custom_id, answers.get(custom_id, unrun))
            self._answered_lines(batch, len(ids[start:start + HAND_BACK_SLICE]))
            await asyncio.sleep(0)  # the items resumed just now run first
            self.handing_back[batch.id] = handed = min(start + HAND_BACK_SLICE, len(ids))
            if time.monotonic() - said >= _SAY_EVERY_S and handed < len(ids):
                said = time.monotonic()
                self.show(f"batch {batch.id}: processing answers {handed}/{len(ids)}")
        del self.handing_back[batch.id]

    def _resolve(self, custom_id: str, result: LineResult, *, keep: bool = True) -> None:
        if keep:
            self.results[custom_id] = result
        for future in self._waiting.pop(custom_id, ()):
            if not future.done():
                future.set_result(result)

    def _fail(self, custom_id: str, why: str, cause: BaseException) -> None:
        """The request's line was never sent: its waiters fail with `NotSubmitted` (one each: an exception
        raised in many tasks would gather all their tracebacks), caused by `cause`."""
        for future in self._waiting.pop(custom_id, ()):
            if not future.done():
                future.set_exception(_not_submitted(why, cause))

    def running(self) -> list[str]:
        """Batches this map submitted or joined that had not ended when last seen."""
        return [batch.id for batch in self.batches.values() if batch.state is None or not batch.state.ended]

    def _spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        # In a context of its own, not the item's that happened to start it: what the batch's own requests
        # (upload, polls, downloads) answer is no item's usage.
        task = asyncio.get_running_loop().create_task(coroutine, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def close_then(self, then: Callable[[], None]) -> None:
        """On the background loop: stop as `close` does, then call `then`, with nobody waiting for either."""
        self._closing = asyncio.get_running_loop().create_task(self.close())  # held: the loop keeps weak references
        self._closing.add_done_callback(lambda _: then())

    async def close(self) -> None:
        """Stop gathering and following (on the background loop), and wait until every task has stopped (the
        store closes next); batches keep running at the provider."""
        if self._flush is not None:
            self._flush.cancel()
        for handle in self._failing:
            handle.cancel()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


_UNREACHED = 0
"""`_first_status` of a request that never reached the provider (nothing listens, the name does not resolve)."""

_ACCESS_REFUSED = (_UNREACHED, 401)
"""What the probe can tell for certain of every batch to come: it cannot reach the provider (after the SDK's own
retries), or the key is refused. A 403 may be about the list alone (a key allowed to submit but not to list)."""

_REFUSED_AT_START = "a first look at the provider's batch list failed, so no batch was submitted"


def _first_status(error: BaseException) -> int | None:
    """The HTTP status of the first error of `error`'s chain that has one, `_UNREACHED` for a request that
    never reached the provider, `None` when neither is known (a timeout, a dropped connection).

    A status below 500 means the provider certainly made no batch of a failed submission; after a timeout or a
    server error it may have: that intent stays, for the next run to look for."""
    for cause in causes(error):
        status = getattr(cause, "status_code", None)
        if isinstance(status, int):
            return status
        if isinstance(cause, ConnectionRefusedError | socket.gaierror):
            return _UNREACHED
    return None


def counted_requests(count: int) -> str:
    """`1 request`, `2 requests`."""
    return f"{count} request{'s' if count != 1 else ''}"


def _not_submitted(why: str, cause: BaseException) -> NotSubmitted:
    error = NotSubmitted(f"{why}: {type(cause).__name__}: {cause}")
    error.__cause__ = cause
    return error


def _chunks(lines: list[Line], backend: BatchBackend) -> list[tuple[str, list[Line]]]:
    """`lines` by endpoint, each group cut where the provider's line count or byte limit would be passed."""
    chunks: list[tuple[str, list[Line]]] = []
    by_endpoint: dict[str, list[Line]] = {}
    for line in lines:
        by_endpoint.setdefault(line.endpoint, []).append(line)
    for endpoint, group in by_endpoint.items():
        chunk: list[Line] = []
        size = 0
        for line in group:
            grown = size + backend.line_size(line)
            if chunk and (len(chunk) >= backend.max_lines or grown > backend.max_bytes):
                chunks.append((endpoint, chunk))
                chunk, grown = [], backend.line_size(line)
            chunk.append(line)
            size = grown
        if chunk:
            chunks.append((endpoint, chunk))
    return chunks


def _described(state: BatchState) -> str:
    counts = f"{state.completed + state.failed}/{state.total} done" if state.total else ""
    failed = f", {state.failed} failed" if state.failed else ""
    return f"batch {state.id}: {state.status}" + (f", {counts}{failed}" if counts else "")


def _unrun_message(state: BatchState) -> str:
    why = f": {state.problem}" if state.problem else ""
    return f"batch {state.id} ended {state.status} before this request ran{why}"


class BatchTransport(httpx2.AsyncBaseTransport):
    """An SDK client's HTTP transport that answers model requests from batches instead of sending them."""

    def __init__(self, collector: Collector) -> None:
        self._collector = collector

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        backend = self._collector.backend
        endpoint = backend.endpoint(request)  # raises for a request no batch can carry
        body = await request.aread()
        result = await self._collector.answer(endpoint, body)
        headers, content = backend.response(body, result)
        if result.status_code >= 400:
            # A failed line is final for the SDK: the map's `retries=` decides whether its item runs again.
            headers = {**headers, "x-should-retry": "false"}
        return httpx2.Response(result.status_code, headers=headers, content=content, request=request)
