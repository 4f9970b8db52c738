"""`nighthawk.map(..., batch_api=True)`: a map whose model requests go through the provider's Batch API.

The map runs as any other (the same items, steps, store and results); only the executor in force is routed
(`AgentStepExecutor.routed`) to a copy of the provider's model whose SDK client hands its requests to this
map's `Collector` instead of sending them. Responses are priced at the batch price (pydantic-ai's price
context `processing: batch`, half the list price for OpenAI and Anthropic). OpenAI's Batch API
(`openai_batches.py`) serves OpenAI models; Anthropic's Message Batches API (`anthropic_batches.py`, loaded
only for an Anthropic model) serves Anthropic models on Anthropic's own API.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import NighthawkError
from ..road.runtime import get_step_executor, scope
from ..threads import _loop
from .batch_backend import BatchBackend
from .batch_records import BatchRecords, Intent
from .batch_rounds import ALONE_FIRST_ABOVE, GATHER_S, BatchTransport, Collector, counted_requests
from .driver import Flight, Opening
from .keys import program_fingerprint
from .openai_batches import OpenAIBatches
from .progress import wanted

__all__ = ["BATCH_CONCURRENCY", "DEFAULT_BATCH_STORE", "batch_map", "batch_store", "cancel_batches"]


DEFAULT_BATCH_STORE = "nighthawk-batches.sqlite"
"""The store file (in the working directory) of a batch-API map given no `store=`."""

BATCH_CONCURRENCY = 10_000
"""Items in flight in a batch-API map given no `concurrency=`: each round of them goes out as one batch."""

POLL_S = 10.0
"""Seconds between the first checks of a batch (`NIGHTHAWK_BATCH_POLL_S` overrides it); the wait grows by
half after each check, up to `MAX_POLL_S`."""

MAX_POLL_S = 60.0


def batch_store(store: str | None) -> str:
    """The store file of a batch map given `store=` (kept answers and batch records share it)."""
    return store if store is not None else DEFAULT_BATCH_STORE


@dataclass(frozen=True)
class Route:
    """What a batch map tells the map that runs through it."""

    note: Callable[[], str]
    """What an interrupt of the map adds to its message: the batches that go on without it."""
    refusal: Callable[[], BaseException | None]
    """Why no request can be sent (the provider cannot be reached or refuses the key), if it is known: asked
    before the first item that is not answered from a store runs, so a map whose answers are all kept still
    returns them offline."""
    opening: Opening | None
    """Opened once the provider has taken a batch of this map (`Collector.opened`): until then the map runs one
    item at a time (`None`: a map small enough to gather its first round, `batch_rounds.ALONE_FIRST_ABOVE`)."""
    flight: Flight
    """The map's items in flight, which the collector reads to know when a round is complete."""


@contextmanager
def batch_map(
    function: Callable[..., Any],
    *,
    store: str | None,
    shown: Any,
    progress: bool | None,
    resubmit: bool = False,
    at_once: int | None = None,
) -> Iterator[Route]:
    """Within it the executor in force is routed to the provider's batches, once the batches an interrupted
    run may have made are found (`resubmit`: the requests of those that cannot be looked up go out again);
    `shown` (the map's progress renderer, open already, or `None`) says how the batches stand, starting with
    the building of the batch client; `at_once`: the most items the map can have in flight, if known.

    Raises:
        NighthawkError: The model in force has no batch endpoint nighthawk can use, or a batch an interrupted
            run may have made cannot be looked up and `resubmit` is not set (nothing was sent).
    """
    with _routed(function, store, progress, shown) as (executor, collector, records, map_key, status):
        status("")  # the client is built: the display drops "preparing the batch client"
        _loop.run_sync(collector.check_access())
        unknown = _loop.run_sync(collector.settle_intents(resubmit=resubmit))
        if unknown and not resubmit:
            raise NighthawkError(_unconfirmed(unknown, store))
        for intent, why in unknown:
            collector.show(f"sending again the {counted_requests(len(intent.custom_ids))} of batch intent {intent.marker} ({why})")
        adopted = _loop.run_sync(collector.adopt_running())
        opening = None
        if not adopted and (at_once is None or at_once > ALONE_FIRST_ABOVE):
            opening = Opening()
            collector.alone_first, collector.opened = True, opening.open
        collector.flight = Flight()
        with scope(step_executor=executor):
            yield Route(
                note=lambda: _interrupt_note(collector, records, map_key), refusal=collector.refusal, opening=opening,
                flight=collector.flight,
            )


def _interrupt_note(collector: Collector, records: BatchRecords, map_key: str) -> str:
    """What an interrupted batch map adds to its message: the batches that go on without it."""
    running = records.running(map_key)
    submitting = records.intents(map_key)
    unread = [batch_id for batch_id in collector.handing_back if batch_id not in running]
    said = []
    if running:
        said.append(f"{len(running)} batch(es) keep running at the provider ({', '.join(running)})")
    if submitting:
        said.append(f"{len(submitting)} batch(es) were being submitted (the provider may have made them)")
    if unread:
        said.append(f"the answers of ended batch(es) {', '.join(unread)} were not all handed back")
    if not said:
        return ""
    joined = "; ".join(said)
    return (
        f" {joined[0].upper()}{joined[1:]}: the same map run again (with the same `store=`) collects their answers "
        'without paying for them again; cancel running ones with `nighthawk.map(function, items, batch_api="cancel")`.'
    )


def cancel_batches(function: Callable[..., Any], *, store: str | None, progress: bool | None) -> list[str]:
    """Cancel the batches this map (same function and model) submitted that are still running; their ids.

    The runs after this one submit those requests anew. What the provider finished before it cancelled may
    still be billed.
    """
    with _routed(function, store, progress) as (_executor, collector, records, map_key, _status):
        cancelled = []
        unknown = _loop.run_sync(collector.settle_intents())  # a batch made while an interrupted run submitted it too
        if unknown:
            collector.show(_unconfirmed(unknown, store))
        for batch_id in records.running(map_key):
            state = _loop.run_sync(collector.backend.cancel(batch_id))
            records.ended(batch_id, "cancelled")
            collector.show(f"batch {batch_id}: {state.status}")
            cancelled.append(batch_id)
        if not cancelled:
            collector.show("no running batch of this map to cancel")
        return cancelled


def _unconfirmed(unknown: list[tuple[Intent, str]], store: str | None) -> str:
    """What to say of the batches an interrupted run may have made that could not be looked up."""
    stored = f", store={store!r}" if store is not None else ""
    said = "; ".join(
        f"{counted_requests(len(intent.custom_ids))} sent at {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(intent.created))} "
        f"(metadata `nighthawk_intent`: {intent.marker!r}); the lookup failed: {why}"
        for intent, why in unknown
    )
    return (
        f"an interrupted run of this map was submitting {len(unknown)} batch(es) that the provider may have made, and "
        f"its batch list could not be read to find them: {said}. Nothing was sent, so nothing is paid twice. Run the "
        "map again once the provider lists its batches, and it collects them; or find them at the provider (OpenAI: "
        "by that metadata; Anthropic: made at that time with as many requests), cancel them there if you wish, and "
        f'send their requests again with `nighthawk.map(function, items, batch_api="resubmit"{stored})`'
    )


@contextmanager
def _routed(
    function: Callable[..., Any], store: str | None, progress: bool | None, shown: Any = None
) -> Iterator[tuple[Any, Collector, BatchRecords, str, _Status]]:
    """The executor in force routed to batches, its collector, the store's batch records, the map's key, and
    where the collector says how the batches stand (`shown`: the map's progress renderer, if any)."""
    executor = get_step_executor()
    routed = getattr(executor, "routed", None)
    configuration = getattr(executor, "configuration", None)
    if routed is None or configuration is None:
        raise NighthawkError(
            f"`batch_api=True` needs a provider model with a Batch API; the executor in force, {executor!r}, has none. "
            "Use an `AgentStepExecutor` with an OpenAI model (`openai-chat:...`, `openai-responses:...`) or an "
            "Anthropic one (`anthropic:...`)"
        )
    if configuration.fallback_models:
        raise NighthawkError("`batch_api=True` cannot use `fallback_models`: a batch goes to one provider; set none")
    map_key = hashlib.sha256(f"{program_fingerprint(function)}\n{executor.model_label}".encode()).hexdigest()[:32]
    made: list[Collector] = []
    show = _Status(progress)
    show.attach(shown)

    def route(model: Any) -> Any:
        batched, collector = _batched_model(model, records, map_key, show)
        made.append(collector)
        return batched

    records = BatchRecords(batch_store(store))
    waited = True
    try:
        if shown is not None:
            show("preparing the batch client")  # its first use loads the provider's SDK: seconds, in a new process
        batched_executor = routed(route)  # refuses a model without a batch endpoint before anything is sent
        try:
            yield batched_executor, made[0], records, map_key, show
        except KeyboardInterrupt:
            # Not waited for: the loop may still be unwinding thousands of cancelled items, and a close sent
            # there now would queue behind them. The collector's tasks stop there, then the store closes.
            waited = False
            _loop._background_loop().call_soon_threadsafe(made[0].close_then, records.close)
            raise
        finally:
            if waited:
                _loop.run_sync(made[0].close())  # every task of the collector stops before the store closes
    finally:
        if waited:
            records.close()


def _batched_model(model: Any, records: BatchRecords, map_key: str, show: _Status) -> tuple[Any, Collector]:
    """A copy of `model` whose requests are answered by batches, and the collector that gathers them."""
    # Here, not at the top: the providers' SDKs and pydantic-ai's model classes stay out of `import nighthawk`.
    import httpx2

    backend, provider = _backend(model)
    poll_s = float(os.environ.get("NIGHTHAWK_BATCH_POLL_S") or POLL_S)
    collector = Collector(
        backend, records, map_key, show, show.unbilled, gather_s=GATHER_S, poll_s=poll_s, max_poll_s=max(poll_s, MAX_POLL_S)
    )
    # The SDK does not retry a failed line itself: the map's `retries=` sends it again, in the next batch.
    client = model.client.copy(http_client=httpx2.AsyncClient(transport=BatchTransport(collector)), max_retries=0)
    batched = type(model)(model.model_name, provider=provider(client), profile=model.profile, settings=model.settings)
    return _batch_priced(batched), collector


def _backend(model: Any) -> tuple[BatchBackend, Callable[[Any], Any]]:
    """The batch API of `model`'s provider, and how to make a pydantic-ai provider around a copy of its client."""
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # here: see `_batched_model`

    if isinstance(model, OpenAIChatModel | OpenAIResponsesModel):
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIBatches(model.client), lambda client: OpenAIProvider(openai_client=client)
    try:
        from anthropic import AsyncAnthropic
        from pydantic_ai.models.anthropic import AnthropicModel
    except ImportError:  # the `anthropic` SDK is not installed: no model can be one
        AnthropicModel = AsyncAnthropic = None  # noqa: N806
    # Anthropic's own API only: its cloud clients (Bedrock, Vertex, Foundry, ...) are other classes, some of
    # them subclasses, with batch services of their own.
    if AnthropicModel is not None and isinstance(model, AnthropicModel) and type(model.client) is AsyncAnthropic:
        from pydantic_ai.providers.anthropic import AnthropicProvider

        from .anthropic_batches import AnthropicBatches

        return AnthropicBatches(model.client), lambda client: AnthropicProvider(anthropic_client=client)
    label = f"{getattr(model, 'system', type(model).__name__)}:{getattr(model, 'model_name', '?')}"
    raise NighthawkError(
        f"`batch_api=True`: the model {label} has no Batch API nighthawk can use. Batch maps work with OpenAI and "
        "OpenAI-compatible models (`openai-chat:...`, `openai-responses:...`) and Anthropic's (`anthropic:...`); "
        "run this map without `batch_api`"
    )


def _batch_priced(model: Any) -> Any:
    from pydantic_ai.models.wrapper import WrapperModel  # here: pydantic-ai stays out of `import nighthawk`

    class BatchPricedModel(WrapperModel):
        """Marks each response as processed in a batch, which genai-prices prices at the batch price."""

        async def request(self, *args: Any, **kwargs: Any) -> Any:
            response = await self.wrapped.request(*args, **kwargs)
            response.provider_details = {**(response.provider_details or {}), "processing": "batch"}
            return response

    return BatchPricedModel(model)


class _Status:
    """Says how the map's batches stand: in the map's progress display, else (no map shows one: a cancel) one
    line on stderr per change, where progress is shown."""

    def __init__(self, progress: bool | None) -> None:
        self._on = wanted(progress, sys.stderr)
        self._last = ""
        self._renderer: Any = None

    def attach(self, renderer: Any) -> None:
        """The map's progress renderer (`None` when it shows none)."""
        self._renderer = renderer
        self._on = self._on and renderer is None

    def unbilled(self, lines: int) -> None:
        """The map's batch lines at the provider whose answers have not come back, for a display that shows them."""
        set_unbilled = getattr(self._renderer, "set_unbilled", None)
        if set_unbilled is not None:
            set_unbilled(lines)

    def __call__(self, text: str) -> None:
        if text == self._last:
            return
        self._last = text
        set_status = getattr(self._renderer, "set_status", None)  # a front end's own renderer may not show one
        if set_status is not None:
            set_status(text)
        elif self._on:
            print(f"nighthawk.map: {text}", file=sys.stderr, flush=True)
