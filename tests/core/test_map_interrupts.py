"""Ctrl-C in a 2,000-item map, in each of its phases (a batch waited on, a batch's answers handed back, direct
requests in flight), against the local batch server: the interrupt comes back as one short message saying what
finished and is kept, which batches go on, and how to cancel them; the next run takes up from there.

The interrupt is sent as a signal would be (`_thread.interrupt_main`), from whatever thread sees the moment.
"""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import re
import threading
import time
from collections.abc import Iterator

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from nighthawk.batch import batch_api
from nighthawk.batch.batch_records import BatchRecords
from nighthawk.batch.progress import MapTally, use_renderer
from nighthawk.budget import UsageTotals
from nighthawk.threads import _loop
from support.batch_server import BatchServer
from support.shouting_map import executor, one_round, shout

pytestmark = [pytest.mark.usefixtures("fresh_session_store"), pytest.mark.timeout(300)]

ITEMS = [f"ticket {n}" for n in range(2000)]
SHORT = 1_500
"""Characters the notebook may show for an interrupted map at most (as for any other error)."""


class InterruptWhen(MapTally):
    """A progress renderer that interrupts the map, as Ctrl-C would, at the first moment `when(self)` holds."""

    def __init__(self, total: int | None, usage: UsageTotals, when) -> None:
        super().__init__(total, usage)
        self.when = when
        self.sent = False

    def _check(self) -> None:
        if not self.sent and self.when(self):
            self.sent = True
            _thread.interrupt_main()

    def finished_item(self) -> None:
        super().finished_item()
        self._check()

    def set_status(self, text: str) -> None:  # from the background loop
        super().set_status(text)
        self._check()

    def tick(self) -> None:
        self._check()

    def close(self) -> None:
        pass


@pytest.fixture
def interrupt_when() -> Iterator:
    previous = use_renderer(None)

    def arm(when) -> None:
        use_renderer(lambda total, usage, progress: InterruptWhen(total, usage, when))

    yield arm
    use_renderer(previous)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[BatchServer]:
    monkeypatch.setenv("NIGHTHAWK_TOKENIZER", "estimate")
    monkeypatch.setenv("NIGHTHAWK_BATCH_POLL_S", "0.05")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    # One batch for the 1,999 items after the first (sent alone), as the messages below say: on a slow machine a
    # pause of the usual gathering window between two items' requests would send part of them early.
    monkeypatch.setattr(batch_api, "GATHER_S", 3.0)
    with BatchServer(one_round, delay=5.0, lifetime=280.0) as served, override_allow_model_requests(True):
        monkeypatch.setenv("OPENAI_BASE_URL", served.base_url)
        yield served


def finished_in(message: str) -> int:
    found = re.search(r"the (\d+) finished items are kept", message)
    assert found, message
    return int(found[1])


def assert_short(error: BaseException) -> str:
    """The message of an interrupted map as a notebook shows it: short, one message, not a chain of frames."""
    shown = "\n".join(error._render_traceback_())  # type: ignore[attr-defined]
    assert len(shown) < SHORT, shown
    assert type(error) is KeyboardInterrupt
    return str(error)


def test_an_interrupt_while_a_batch_runs_says_the_batch_goes_on_and_keeps_it_for_the_next_run(server, interrupt_when, tmp_path):
    store = str(tmp_path / "map.sqlite")
    # batch_1 is the first item's request, sent alone; batch_2 the 1,999 others, interrupted once the first item
    # has its answer.
    interrupt_when(lambda shown: shown.done == 1 and "batch_2: in_progress" in shown.status)
    with nh.run(executor()), pytest.raises(KeyboardInterrupt) as interrupted:
        nh.map(shout, ITEMS, batch_api=True, store=store, progress=False)

    message = assert_short(interrupted.value)
    assert message.startswith(f"the map was interrupted; the 1 finished item is kept in `store={store!r}`")
    assert "1 batch(es) keep running at the provider (batch_2)" in message
    assert 'batch_api="cancel"' in message and "without paying for them again" in message
    assert server.cancelled == []
    records = BatchRecords(store)
    assert all(records.batch_of(line["custom_id"]) == batch.id for batch in server.batches.values() for line in batch.lines)


def test_an_interrupt_while_answers_are_handed_back_keeps_the_finished_items_and_the_batch_answers_the_rest(
    server, interrupt_when, tmp_path
):
    server.delay = 0.5
    store = str(tmp_path / "map.sqlite")
    interrupt_when(lambda shown: shown.done >= 100)
    with nh.run(executor()), pytest.raises(KeyboardInterrupt) as interrupted:
        nh.map(shout, ITEMS, batch_api=True, store=store, progress=False)

    message = assert_short(interrupted.value)
    finished = finished_in(message)
    assert 100 <= finished < len(ITEMS)
    assert f"kept in `store={store!r}`" in message and f"({len(ITEMS) - finished} left)" in message
    # Whether the message also says the ended batch's answers were not all handed back depends on whether the
    # interrupt came before the last slice was handed over (on a fast machine it is all handed over first).

    use_renderer(None)
    with nh.run(executor()):
        again = nh.map(shout, ITEMS, batch_api=True, store=store, progress=False)
    assert list(again) == [text.upper() + "!" for text in ITEMS]
    assert again.usage.items_kept == finished
    assert server.batch_lines == len(ITEMS)  # the ended batches' answers were read again, not paid for again


def test_an_interrupt_of_a_direct_map_keeps_the_finished_items_and_the_next_run_sends_only_the_others(server, interrupt_when):
    interrupt_when(lambda shown: shown.done >= 100)
    with nh.run(executor()), pytest.raises(KeyboardInterrupt) as interrupted:
        nh.map(shout, ITEMS, progress=False)

    message = assert_short(interrupted.value)
    finished = finished_in(message)
    assert message == (
        f"the map was interrupted; the {finished} finished items are kept for this session. Run the same map again to "
        f"run only the items left ({len(ITEMS) - finished} left)."
    )
    sent = server.direct_requests
    time.sleep(0.3)
    assert server.direct_requests == sent  # nothing of the interrupted map goes out afterwards

    use_renderer(None)
    with nh.run(executor()):
        again = nh.map(shout, ITEMS, progress=False)
    assert list(again) == [text.upper() + "!" for text in ITEMS]
    assert again.usage.items_kept == finished
    assert server.direct_requests == sent + len(ITEMS) - finished


def test_the_interrupted_map_is_the_last_error_with_where_it_was_interrupted(server, interrupt_when):
    interrupt_when(lambda shown: shown.done >= 10)
    with nh.run(executor()), pytest.raises(KeyboardInterrupt) as interrupted:
        nh.map(shout, ITEMS[:200], progress=False)
    assert nh.last_error() is interrupted.value
    assert isinstance(interrupted.value.__cause__, KeyboardInterrupt)  # the frames where it landed


def test_refusing_thousands_of_waiting_requests_hands_them_to_the_loop_in_one_call() -> None:
    loop = _loop._background_loop()
    caller = _loop._Caller()
    context = contextvars.copy_context()
    context.run(_loop._caller.set, caller)
    ran: list[int] = []
    tasks = []
    for n in range(2000):
        tasks.append(asyncio.run_coroutine_threadsafe(_in(context, lambda n=n: ran.append(n)), loop))
    while caller.requests.qsize() < 2000:
        time.sleep(0.01)
    handed: list[object] = []
    original = loop.call_soon_threadsafe

    def counted(callback, *args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            handed.append(callback)
        return original(callback, *args, **kwargs)

    loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    try:
        _loop._refuse_all(caller.close())
    finally:
        del loop.call_soon_threadsafe
    outcomes = [task.result(timeout=10) for task in tasks]
    assert ran == []  # none of their user code ran
    assert outcomes == ["refused"] * 2000
    assert len(handed) == 1


async def _in(context: contextvars.Context, fn) -> str:
    """`on_user_thread(fn)` in `context` (where a caller serves it), as a map's step asks; how it ended."""
    try:
        await asyncio.get_running_loop().create_task(_loop.on_user_thread(fn), context=context)
    except asyncio.CancelledError:
        return "refused"
    return "ran"
