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
        options = _map_options(function, iterables, batch_api, concurrency=concurrency, store=store, progress=progress)
        if isinstance(options, MapResult):  # `batch_api="cancel"`: the batches it cancelled, nothing run
            return options
        return map_reporting_items(
            function, iterables, on_error=on_error, retries=retries, progress=progress, give_up_after_s=give_up_after_s,
            **options,
        )


def _map_options(
    function: Callable[..., Any], iterables: tuple[Iterable[Any], ...], batch_api: bool | Literal["cancel", "resubmit"], *,
    concurrency: int | None, store: str | None, progress: bool | None,
) -> dict[str, Any] | MapResult:
    """How `map` runs its items: the `concurrency`, `store` and `routed` it passes to `map_reporting_items`,
    or, for `batch_api="cancel"`, the batches cancelled. `map` makes the call itself, so that the warning the
    call may give points at `map`'s caller."""
    if batch_api is False:
        return {"concurrency": 8 if concurrency is None else concurrency, "store": store}
    if batch_api not in (True, "cancel", "resubmit"):
        raise ValueError(f'`batch_api` must be True, False, "resubmit" or "cancel", got {batch_api!r}')
    from .batch_api import BATCH_CONCURRENCY, batch_map, batch_store, cancel_batches  # on first use: it loads the OpenAI SDK

    if batch_api == "cancel":
        return MapResult(cancel_batches(function, store=store, progress=progress))
    concurrency = BATCH_CONCURRENCY if concurrency is None else concurrency
    total = _total(iterables)
    return {
        "concurrency": concurrency, "store": batch_store(store), "routed": lambda shown: batch_map(
            function, store=store, shown=shown, progress=progress, resubmit=batch_api == "resubmit",
            at_once=concurrency if total is None else min(total, concurrency),
        ),
    }


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
    if found.digest is None and store is not None:
        warnings.warn(
            f"`store={store!r}` keeps none of this map's items, nor does this session: {found.unstable} has no form "
            "that is the same in every process and changes when it does, so a kept answer could be stale. Make it a "
            "value pydantic can turn into JSON (numbers, strings, lists, dicts, dataclasses, pydantic models)",
            stacklevel=3,
        )
    run = _MapRun(
        iterables, context=found.digest, store=store, on_error=on_error, retries=retries, item_usage=item_usage,
        give_up_after_s=give_up_after_s,
    )
    with ExitStack() as stack:
        run.open(stack, function, progress, routed)
        route = run.route
        try:
            drive(
                function, run.pending(), concurrency=concurrency, settle=run.settle, total=run.total,
                tick=getattr(run.shown, "tick", None), opening=route.opening if route is not None else None,
                flight=route.flight if route is not None else None,
            )
        except BaseException as exc:
            _ended(run.shown, run.stop, exc, run.finished, run.total, store, route.note() if route is not None else "")
            raise
    return run.results


class _MapRun:
    """One map's items as they run: their results, the items in flight and the equal items waiting for their
    answer, what was kept or shared, and why the map stopped."""

    def __init__(
        self, iterables: tuple[Iterable[Any], ...], *, context: str | None, store: str | None,
        on_error: Literal["raise", "collect"], retries: int, item_usage: Callable[[int, UsageTotals], None] | None,
        give_up_after_s: float,
    ) -> None:
        self.iterables = iterables
        self.context = context
        """`None`: some value the answers depend on cannot be digested, so no item is looked up or kept."""
        self.store = store
        self.on_error = on_error
        self.retries = retries
        self.item_usage = item_usage
        self.session = session_store()
        self.keys: dict[int, tuple[str, tuple[object, ...]]] = {}
        self.sharing: dict[str, list[int]] = {}
        """Key of each item in flight -> the positions of equal items waiting for its answer."""
        self.watch = CommonCause(give_up_after_s=give_up_after_s)
        self.results = MapResult()
        self.usage = self.results.usage
        self.total = _total(iterables)
        self.stop: list[str] = []
        """Why the map stopped, as its summary says it (set before the error is raised)."""
        self.finished = 0
        """Items with their answer (run, kept or shared)."""
        self.answered_here: set[str] = set()
        """Keys of the items this map answered: an equal item read after one of them ended is shared, not kept."""
        self.kept_keys: set[str] = set()
        """Keys of the kept items: equal items were paid for once, so their cost counts once."""
        self.shown: ProgressRenderer | None = None
        self.route: Route | None = None
        self.disk: DiskStore | None = None
        """The display, the route and the store file, once the map is open (`open`)."""

    def open(
        self, stack: ExitStack, function: Callable[..., Any], progress: bool | None,
        routed: Callable[[ProgressRenderer | None], AbstractContextManager[Route]] | None,
    ) -> None:
        """Count what the map spends and open its display, its route and its store file, all left by `stack`."""
        stack.enter_context(counting(self.usage))  # an unbounded group: it only counts
        shown = self.shown = open_progress(progress, self.total, self.usage)
        if shown is not None:
            stack.callback(shown.close)
        try:
            self.route = stack.enter_context(routed(shown)) if routed is not None else None
            # After routing: a map refused there leaves no store file.
            self.disk = DiskStore(self.store, return_type(function)) if self.store is not None else None
        except BaseException as exc:
            _ended(shown, [], exc, self.finished, self.total, self.store, "")
            raise
        if self.disk is not None:
            stack.callback(self.disk.close)

    def pending(self) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """The items to run, as the driver asks for them; those kept or equal to one in flight are answered here."""
        asked = False
        for index, args in enumerate(zip(*self.iterables)):
            self.results.append(None)
            key, anchors = item_key(self.context or "", args)
            if key in self.sharing:
                self.sharing[key].append(index)  # an equal item is in flight: its answer is this one's too
                continue
            if self._kept(index, key, anchors):
                continue
            if self.route is not None and not asked:
                asked = True
                _stop_if_refused(self.route.refusal(), self.results, self.finished, self.store, self.stop)
            self.keys[index] = (key, anchors)
            self.sharing[key] = []
            yield index, args

    def _kept(self, index: int, key: str, anchors: tuple[object, ...]) -> bool:
        """Answer item `index` from this session or the store file, when either has its answer."""
        value = self.session.get(key) if self.context is not None else MISSING
        paid = self.session.paid(key)
        if value is MISSING and self.disk is not None and self.context is not None:
            value = self.disk.get(key)
            if value is not MISSING:
                paid = self.disk.paid(key)
                self.session.put(key, value, anchors, paid)
        if value is MISSING:
            return False
        usage, shown = self.usage, self.shown
        self.results[index] = value
        self.finished += 1
        if self.item_usage is not None:
            self.item_usage(index, UsageTotals())
        if key in self.answered_here:
            usage.items_shared += 1
            if shown is not None:
                shown.shared_item(failed=False)
            return True
        usage.items_kept += 1
        if key not in self.kept_keys:
            self.kept_keys.add(key)
            usage.kept_cost_usd = None if paid is None or usage.kept_cost_usd is None else usage.kept_cost_usd + paid
        if shown is not None:
            shown.kept_item()
        return True

    def _share(self, key: str, value: object, error: BaseException | None) -> None:
        """Give the equal items waiting for an item its answer, or its failure."""
        for other in self.sharing.pop(key, ()):
            if error is None:
                self.results[other] = value
                self.finished += 1
            else:
                self.results.errors[other] = error
            self.usage.items_shared += 1
            if self.item_usage is not None:
                self.item_usage(other, UsageTotals())
            if self.shown is not None:
                self.shown.shared_item(failed=error is not None)

    def settle(
        self, index: int, args: tuple[Any, ...], attempt: int, value: object, error: BaseException | None, spent: UsageTotals
    ) -> float | None:
        """The driver's `settle`: keep an item's answer, or decide on its failure (see `_failed`)."""
        if error is not None:
            return self._failed(index, attempt, error, spent)
        key, anchors = self.keys.pop(index)
        self.answered_here.add(key)
        if self.disk is not None and self.context is not None:
            self.disk.put(key, value, spent.cost_usd)  # first, so a value it cannot hold fails the map at once
        if self.context is not None:
            self.session.put(key, value, anchors, spent.cost_usd)
        self.results[index] = value
        self.finished += 1
        self.watch.succeeded(index)
        if self.item_usage is not None:
            self.item_usage(index, spent)
        if self.shown is not None:
            self.shown.finished_item()
        self._share(key, value, None)
        return None

    def _failed(self, index: int, attempt: int, error: BaseException, spent: UsageTotals) -> float | None:
        """Run a failed item again (after the wait returned), fail it, or stop the map (raising why)."""
        results, watch = self.results, self.watch
        if isinstance(error, BudgetExceededError):
            self.stop.append(f"stopped at item {index}: {_brief(error)}")
            error.partial = results
            raise error  # the group is spent: no item can run any more
        passing = isinstance(error, Exception) and watch.passing(error, index)
        final = not passing and (not isinstance(error, Exception) or attempt >= self.retries)
        cause = watch.failed(error, final=final) if isinstance(error, Exception) else None
        if cause is None and not final:
            return retry_wait(error) if passing else 0.0
        key, _ = self.keys.pop(index)
        if cause is not None or self.on_error == "collect" and isinstance(error, Exception):
            results.errors[index] = error
            if self.item_usage is not None:
                self.item_usage(index, spent)
        if self.shown is not None:
            self.shown.failed_item(index, error)
        if cause is not None:
            self._share(key, None, error)
            self.stop.append(f"stopped at item {index}: {cause}")
            raise _stopped(cause, watch.affected(error), index, error, results, self.finished, self.total, self.store) from error
        if self.on_error == "raise" or not isinstance(error, Exception):
            self.stop.append(f"stopped at item {index}: {_brief(error)}")
            raise MapItemError(
                f"item {index} of the map failed: {_described(error)}. The map stopped; set "
                '`on_error="collect"` to run the other items and collect the failures, or `retries=` to '
                "try failed items again",
                index=index,
                partial=results,
            ) from error
        self._share(key, None, error)
        return None


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
