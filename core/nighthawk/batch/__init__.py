"""`nighthawk.map`: one natural function over many items, the waits for the model overlapped.

The layer above the road: it drives many calls (`driver`), keeps what finished (`store`), shows how far
it got (`progress`), and leaves each call to take the road exactly as a plain call does.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, nullcontext
from typing import TYPE_CHECKING, Any, Literal

from dataclasses import dataclass

from ..budget import UsageTotals, counting
from .._report import shown_short
from ..errors import BudgetExceededError, MapItemError, MapStoppedError, record_error
from .keys import item_key, map_context
from .progress import ProgressRenderer, open_progress
from .ratelimit import retry_wait
from .stopping import GIVE_UP_AFTER_S, CommonCause, request_failure
from .store import MISSING, DiskStore, return_type, session_store

if TYPE_CHECKING:
    from ..oversight import Oversight
    from .batch_api import Route

__all__ = ["MapResult", "MapUsage", "map", "map_reporting_items"]

_map = map  # the builtin, before this module's own `map` hides it


@dataclass(kw_only=True)
class MapUsage(UsageTotals):
    """What a map's run spent (`UsageTotals`), and how many items it answered without asking the model."""

    items_kept: int = 0
    """Items answered from this session's earlier maps or from `store=` (never by an item of this map)."""
    kept_cost_usd: float | None = 0.0
    """What the kept items cost when they ran, in an earlier map (not spent by this one, so not in
    `cost_usd`); `None` when the cost of some is unknown (a model without a price, a store written before
    nighthawk kept costs)."""
    items_shared: int = 0
    """Items answered by another item of the same map with equal arguments, which ran once for all of them
    (however many were in flight at once)."""


class MapResult(list):  # type: ignore[type-arg]
    """A map's results in input order (`None` where an item failed), with its errors and usage."""

    errors: dict[int, BaseException]
    """Failed items by position (with `on_error="collect"`; equal items share one exception)."""
    usage: MapUsage
    """Requests, tokens and cost of this run, and the items answered without a request."""

    def __init__(self, values: Iterable[object] = (), *, errors: dict[int, BaseException] | None = None,
                 usage: MapUsage | None = None) -> None:
        super().__init__(values)
        self.errors = errors if errors is not None else {}
        self.usage = usage if usage is not None else MapUsage()


def map(  # noqa: A001 - shaped like the builtin on purpose
    function: Callable[..., Any],
    /,
    *iterables: Iterable[Any],
    concurrency: int | None = None,
    on_error: Literal["raise", "collect"] = "raise",
    retries: int = 0,
    store: str | None = None,
    progress: bool | None = None,
    batch_api: bool | Literal["cancel", "resubmit"] = False,
    oversight: Oversight | None = None,
    isolated: bool = False,
    give_up_after_s: float = GIVE_UP_AFTER_S,
) -> MapResult:
    """Call `function` on the items of `iterables` (zipped, as the builtin `map`), `concurrency` at a time.

    Each item's Python (the function's own code, the model's expressions, return values, tools) runs on
    this thread, as in a plain call; only the waits for the model overlap. Items finished by an earlier
    map of this session, or kept in `store`, are not run again when nothing that decides their answer
    changed (the program, the values it reads, the arguments, the model and its configuration, the scope's
    prompt fragments: see `nighthawk.batch.keys`); items equal to one already running wait for its answer
    (or failure) instead of asking the model again.

    Args:
        function: A natural function (sync or async), or any callable calling them. A sync callable that
            is not itself a natural function runs one item at a time.
        iterables: One per parameter; read lazily, as places free up.
        concurrency: Items in flight at once (8; with `batch_api`, 10,000, each round of them one batch).
        on_error: `"raise"` stops at the first failed item; `"collect"` runs them all, puts `None` at
            failed positions and the exceptions in `result.errors`.
        retries: Runs again an item that failed (but not on a budget stop) up to this many times. A
            failure that passes by itself (429, 5xx, a timeout) is not one: it pauses the whole map (for the
            wait a 429 asks), with fewer items in flight afterwards, and the item runs again whatever
            `retries` says.
        store: A sqlite file keeping finished items across sessions (values as JSON via the return
            annotation).
        progress: Show how far the map is: a line on stderr, or one live display in a notebook with the
            kernel extension loaded; by default in a terminal or a notebook. `False` shows nothing.
        batch_api: `True` sends the model requests through the provider's Batch API (OpenAI and compatible
            providers), at the batch price: each round of requests goes out as one batch, recorded in `store`
            (default `nighthawk-batches.sqlite` in the working directory), so running the map again after an
            interrupt or a restart collects the batches already submitted. `"cancel"` cancels this map's running
            batches, runs nothing and returns their ids. `"resubmit"` is `True` that also sends again the requests
            of a batch an interrupted run may have made but that the provider's batch list could not confirm
            (which may pay for them twice). See docs/batch.md.
        oversight: Put this oversight in force for the map's steps too, after the scope's (`nh.oversight`).
        isolated: Run each step's model code in a walled child process (`nh.oversight.isolated()`), for
            items that cannot be trusted (web pages, e-mails, user-submitted text). Linux only.
        give_up_after_s: Seconds of failures that pass by themselves (429, 5xx, timeouts) without any item
            succeeding after which the map stops with `MapStoppedError` (an item failing so that long on its
            own, while others succeed, fails).

    Raises:
        NighthawkError: (`batch_api`) A batch an interrupted run submitted may exist but could not be looked
            up: nothing was sent; the message names it and says how to cancel it or send again.
        MapItemError: An item failed with `on_error="raise"` (its exception is the cause; the results so
            far are on `.partial`).
        BudgetExceededError: An enclosing budget ran out (whatever `on_error` and `retries` say); the results
            so far are on `.partial`, and what finished is kept for the next run.
        MapStoppedError: The model requests kept failing for a reason that is not about the item (no
            connection, a refused key, an unknown model, the same failure `CONSECUTIVE_FAILURES` times in a
            row, or `give_up_after_s` of 429s, 5xx or timeouts without a success; see
            `nighthawk.batch.stopping`), whatever `on_error` and `retries` say; the results so far
            are on `.partial`, and what finished is kept for the next run.
        KeyboardInterrupt: Interrupted: everything in flight was cancelled at once; the message says what
            finished and is kept, and, for a batch map, which batches keep running and how to cancel them.
    """
    with _overseen(oversight, isolated):
        if batch_api is False:
            return map_reporting_items(
                function, iterables, concurrency=8 if concurrency is None else concurrency, on_error=on_error, retries=retries, store=store, progress=progress,
                give_up_after_s=give_up_after_s,
            )
        if batch_api not in (True, "cancel", "resubmit"):
            raise ValueError(f'`batch_api` must be True, False, "resubmit" or "cancel", got {batch_api!r}')
        from .batch_api import BATCH_CONCURRENCY, batch_map, batch_store, cancel_batches  # on first use: it loads the OpenAI SDK

        if batch_api == "cancel":
            return MapResult(cancel_batches(function, store=store, progress=progress))
        concurrency = BATCH_CONCURRENCY if concurrency is None else concurrency
        total = _total(iterables)
        return map_reporting_items(
            function, iterables, concurrency=concurrency, on_error=on_error, retries=retries, store=batch_store(store), progress=progress,
            give_up_after_s=give_up_after_s, routed=lambda shown: batch_map(
                function, store=store, shown=shown, progress=progress, resubmit=batch_api == "resubmit",
                at_once=concurrency if total is None else min(total, concurrency),
            ),
        )


def _overseen(oversight: Oversight | None, isolated: bool) -> AbstractContextManager[None]:
    """`map`'s own oversight, in force for its steps after the scope's."""
    if oversight is None and not isolated:
        return nullcontext()
    from ..oversight import combine, isolated as walls
    from ..oversight._oversee import overseeing_also

    if isolated:
        oversight = walls() if oversight is None else combine(oversight, walls())
    assert oversight is not None
    return overseeing_also(oversight)


def map_reporting_items(
    function: Callable[..., Any],
    iterables: tuple[Iterable[Any], ...],
    *,
    concurrency: int = 8,
    on_error: Literal["raise", "collect"] = "raise",
    retries: int = 0,
    store: str | None = None,
    progress: bool | None = None,
    item_usage: Callable[[int, UsageTotals], None] | None = None,
    routed: Callable[[ProgressRenderer | None], AbstractContextManager[Route]] | None = None,
    give_up_after_s: float = GIVE_UP_AFTER_S,
) -> MapResult:
    """`map`, also handing each item, as it ends (done or failed for good), with what its steps spent over
    all its attempts to `item_usage(index, spent)` (`nighthawk.ray`'s per-row usage columns); an item
    answered from a store spent nothing. An item never reported did not end (the map stopped first).
    `routed(renderer)` (a batch map's) is entered once the map's progress display is open (`None`: none), so
    its first line is drawn before the batch client is built, and left after the items; it tells the display
    how the batches stand and yields a `batch_api.Route`: what an interrupt's message adds, why nothing
    can be sent (asked before the first item that is not answered from a store runs), and the opening that
    holds the map to one item until the provider has taken a batch."""
    _check(concurrency=concurrency, on_error=on_error, retries=retries, iterables=iterables, give_up_after_s=give_up_after_s)
    from .driver import drive  # here, not at the top: `import nighthawk` stays free of asyncio

    found = map_context(function)
    context = found.digest
    """`None`: some value the answers depend on cannot be digested, so no item is looked up or kept."""
    if context is None and store is not None:
        warnings.warn(
            f"`store={store!r}` keeps none of this map's items, nor does this session: {found.unstable} has no form "
            "that is the same in every process and changes when it does, so a kept answer could be stale. Make it a "
            "value pydantic can turn into JSON (numbers, strings, lists, dicts, dataclasses, pydantic models)",
            stacklevel=3,
        )
    session = session_store()
    keys: dict[int, tuple[str, tuple[object, ...]]] = {}
    sharing: dict[str, list[int]] = {}
    """Key of each item in flight -> the positions of equal items waiting for its answer."""
    watch = CommonCause(give_up_after_s=give_up_after_s)
    results = MapResult()
    total = _total(iterables)
    stop: list[str] = []
    """Why the map stopped, as its summary says it (set before the error is raised)."""
    finished = 0
    """Items with their answer (run, kept or shared)."""
    answered_here: set[str] = set()
    """Keys of the items this map answered: an equal item read after one of them ended is shared, not kept."""
    kept_keys: set[str] = set()
    """Keys of the kept items: equal items were paid for once, so their cost counts once."""
    with ExitStack() as stack:
        usage = results.usage
        stack.enter_context(counting(usage))  # an unbounded group: it only counts
        shown = open_progress(progress, total, usage)
        if shown is not None:
            stack.callback(shown.close)
        try:
            route = stack.enter_context(routed(shown)) if routed is not None else None
            # After routing: a map refused there leaves no store file.
            disk = DiskStore(store, return_type(function)) if store is not None else None
        except BaseException as exc:
            _ended(shown, [], exc, finished, total, store, "")
            raise
        if disk is not None:
            stack.callback(disk.close)

        def pending() -> Iterator[tuple[int, tuple[Any, ...]]]:
            nonlocal finished
            asked = False
            for index, args in enumerate(zip(*iterables)):
                results.append(None)
                key, anchors = item_key(context or "", args)
                if key in sharing:
                    sharing[key].append(index)  # an equal item is in flight: its answer is this one's too
                    continue
                value = session.get(key) if context is not None else MISSING
                paid = session.paid(key)
                if value is MISSING and disk is not None and context is not None:
                    value = disk.get(key)
                    if value is not MISSING:
                        paid = disk.paid(key)
                        session.put(key, value, anchors, paid)
                if value is not MISSING:
                    results[index] = value
                    finished += 1
                    if item_usage is not None:
                        item_usage(index, UsageTotals())
                    if key in answered_here:
                        usage.items_shared += 1
                        if shown is not None:
                            shown.shared_item(failed=False)
                        continue
                    usage.items_kept += 1
                    if key not in kept_keys:
                        kept_keys.add(key)
                        usage.kept_cost_usd = None if paid is None or usage.kept_cost_usd is None else usage.kept_cost_usd + paid
                    if shown is not None:
                        shown.kept_item()
                    continue
                if route is not None and not asked:
                    asked = True
                    _stop_if_refused(route.refusal(), results, finished, store, stop)
                keys[index] = (key, anchors)
                sharing[key] = []
                yield index, args

        def share(key: str, value: object, error: BaseException | None) -> None:
            """Give the equal items waiting for an item its answer, or its failure."""
            nonlocal finished
            for other in sharing.pop(key, ()):
                if error is None:
                    results[other] = value
                    finished += 1
                else:
                    results.errors[other] = error
                usage.items_shared += 1
                if item_usage is not None:
                    item_usage(other, UsageTotals())
                if shown is not None:
                    shown.shared_item(failed=error is not None)

        def settle(
            index: int, args: tuple[Any, ...], attempt: int, value: object, error: BaseException | None, spent: UsageTotals
        ) -> float | None:
            nonlocal finished
            if error is None:
                key, anchors = keys.pop(index)
                answered_here.add(key)
                if disk is not None and context is not None:
                    disk.put(key, value, spent.cost_usd)  # first, so a value it cannot hold fails the map at once
                if context is not None:
                    session.put(key, value, anchors, spent.cost_usd)
                results[index] = value
                finished += 1
                watch.succeeded(index)
                if item_usage is not None:
                    item_usage(index, spent)
                if shown is not None:
                    shown.finished_item()
                share(key, value, None)
                return None
            if isinstance(error, BudgetExceededError):
                stop.append(f"stopped at item {index}: {_brief(error)}")
                error.partial = results
                raise error  # the group is spent: no item can run any more
            passing = isinstance(error, Exception) and watch.passing(error, index)
            final = not passing and (not isinstance(error, Exception) or attempt >= retries)
            cause = watch.failed(error, final=final) if isinstance(error, Exception) else None
            if cause is None and not final:
                return retry_wait(error) if passing else 0.0
            key, _ = keys.pop(index)
            if cause is not None or on_error == "collect" and isinstance(error, Exception):
                results.errors[index] = error
                if item_usage is not None:
                    item_usage(index, spent)
            if shown is not None:
                shown.failed_item(index, error)
            if cause is not None:
                share(key, None, error)
                stop.append(f"stopped at item {index}: {cause}")
                raise _stopped(cause, watch.affected(error), index, error, results, finished, total, store) from error
            if on_error == "raise" or not isinstance(error, Exception):
                stop.append(f"stopped at item {index}: {_brief(error)}")
                raise MapItemError(
                    f"item {index} of the map failed: {_described(error)}. The map stopped; set "
                    '`on_error="collect"` to run the other items and collect the failures, or `retries=` to '
                    "try failed items again",
                    index=index,
                    partial=results,
                ) from error
            share(key, None, error)
            return None

        try:
            drive(
                function, pending(), concurrency=concurrency, settle=settle, total=total, tick=getattr(shown, "tick", None),
                opening=route.opening if route is not None else None, flight=route.flight if route is not None else None,
            )
        except BaseException as exc:
            _ended(shown, stop, exc, finished, total, store, route.note() if route is not None else "")
            raise
    return results


def _ended(
    shown: ProgressRenderer | None, stop: list[str], exc: BaseException, finished: int, total: int | None, store: str | None, note: str
) -> None:
    """Say in the display why the map stopped; an interrupt becomes the map's own, saying what it keeps."""
    if shown is not None:
        shown.stopped(stop[0] if stop else "interrupted" if isinstance(exc, KeyboardInterrupt) else f"stopped: {_brief(exc)}")
    if type(exc) is KeyboardInterrupt:  # not a step deadline's (a subclass), which its step handles
        raise _interrupted(finished, total, store, note) from exc


def _interrupted(finished: int, total: int | None, store: str | None, note: str) -> KeyboardInterrupt:
    """The interrupt of a map, saying what it keeps and how to go on, shown as short as any Nighthawk error
    (`nighthawk.last_error()` keeps where it was interrupted)."""
    kept = f"kept in `store={store!r}`" if store is not None else "kept for this session"
    if finished:
        done = f"the {finished} finished item{'s are' if finished != 1 else ' is'} {kept}"
    else:
        done = "no item had finished"
    left = "" if total is None else f" ({total - finished} left)"
    error = KeyboardInterrupt(
        f"the map was interrupted; {done}. Run the same map again to run only the items left{left}.{note}"
    )
    record_error(shown_short(error))
    return error


def _described(error: BaseException) -> str:
    """`Type: message`, without the full stop the message may end with (the caller goes on after it)."""
    text = str(error).rstrip().rstrip(".")
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


_BRIEF_CHARS = 160
"""A summary names why the map stopped in this much: the whole message is the error's."""


def _brief(error: BaseException) -> str:
    """`_described(error)` up to the end of its first clause, for a summary line."""
    text = _described(error)
    cut = min((at for at in (text.find("; "), text.find(". ")) if at > 0), default=len(text))
    text = text[:cut]
    return text if len(text) <= _BRIEF_CHARS else text[: _BRIEF_CHARS - 3] + "..."


def _stop_if_refused(refusal: BaseException | None, results: MapResult, finished: int, store: str | None, stop: list[str]) -> None:
    """Stop a map, before it sends anything, whose route knows that no request can succeed (a batch map's
    provider refuses the key or cannot be reached), as its first item's failure would stop it."""
    failure = None if refusal is None else request_failure(refusal)
    if refusal is None or failure is None or not failure.common:
        return
    kept = f"kept in `store={store!r}`" if store is not None else "kept for this session"
    ended = (
        f"The {finished} finished item{'s are' if finished != 1 else ' is'} {kept}: fix the cause and run the same "
        "map again to run only the others" if finished else "No item finished: fix the cause and run the map again"
    )
    stop.append(f"stopped before sending anything: {failure.kind}")
    raise MapStoppedError(
        f"the map stopped before sending anything: {failure.kind}. {ended}",
        cause=failure.kind,
        affected=0,
        index=0,
        partial=results,
    ) from refusal


def _stopped(
    cause: str, affected: int, index: int, error: BaseException, results: MapResult, finished: int, total: int | None,
    store: str | None,
) -> MapStoppedError:
    """The error of a map stopped by a common cause; `finished`: the items that have their answer."""
    unrun = None if total is None else total - finished - len(results.errors)
    left = "" if unrun is None else f"; {unrun} item{'s were' if unrun != 1 else ' was'} not run"
    kept = f"kept in `store={store!r}`" if store is not None else "kept for this session"
    ended = (
        f"The {finished} finished item{'s are' if finished != 1 else ' is'} {kept}: fix the cause and run the same map "
        "again to run only the others" if finished else "No item finished: fix the cause and run the map again"
    )
    return MapStoppedError(
        f"the map stopped: {cause}. {affected} item{'s' if affected != 1 else ''} failed this way (item {index}: "
        f"{_described(error)}){left}. {ended}",
        cause=cause,
        affected=affected,
        index=index,
        partial=results,
    )


def _check(*, concurrency: int, on_error: str, retries: int, iterables: tuple[Iterable[Any], ...], give_up_after_s: float) -> None:
    if not iterables:
        raise TypeError("`nighthawk.map` needs at least one iterable after the function, one per parameter")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"`concurrency` must be a whole number of at least 1, got {concurrency!r}")
    if on_error not in ("raise", "collect"):
        raise ValueError(f'`on_error` must be "raise" or "collect", got {on_error!r}')
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"`retries` must be a whole number of at least 0, got {retries!r}")
    if isinstance(give_up_after_s, bool) or not isinstance(give_up_after_s, (int, float)) or not give_up_after_s > 0:
        raise ValueError(f"`give_up_after_s` must be a number of seconds above 0, got {give_up_after_s!r}")


def _total(iterables: tuple[Iterable[Any], ...]) -> int | None:
    try:
        return min(len(iterable) for iterable in iterables)  # type: ignore[arg-type]
    except TypeError:  # a generator: no total, no ETA
        return None
