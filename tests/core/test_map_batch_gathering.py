"""How a batch map's requests go out: a round of its items in few batches, whatever pauses a busy machine leaves
between their requests; on a run after an interrupt, the answers already waiting at the provider come back
before anything new is submitted; and a map that submitted nothing leaves no store file."""

from __future__ import annotations

import _thread
import sqlite3

import pytest

import nighthawk as nh
from nighthawk.batch.batch_records import BatchRecords
from nighthawk.batch.openai_batches import OpenAIBatches
from nighthawk.batch.progress import MapTally, use_renderer
from support.batch_maps import environment, executor, serve  # noqa: F401 - `environment` is a fixture
from support.batch_server import BatchServer
from support.shouting_map import one_round, shout

pytestmark = [pytest.mark.usefixtures("fresh_session_store"), pytest.mark.timeout(600)]


def test_a_round_of_two_thousand_items_goes_out_in_at_most_three_batches(environment, tmp_path):
    environment.setenv("NIGHTHAWK_BATCH_POLL_S", "1")
    texts = [f"word {n}" for n in range(2000)]
    with serve(environment, BatchServer(one_round, delay=1.0, lifetime=580.0)) as server, nh.run(executor()):
        result = nh.map(shout, texts, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(result) == [text.upper() + "!" for text in texts]
    assert len(server.batches) <= 3, [len(batch.lines) for batch in server.batches.values()]


class InterruptOnStatus(MapTally):
    """A progress renderer that interrupts the map, as Ctrl-C would, once its status says `text`."""

    def __init__(self, total, usage, text: str) -> None:
        super().__init__(total, usage)
        self.text = text
        self.sent = False

    def set_status(self, text: str) -> None:  # from the background loop
        super().set_status(text)
        if not self.sent and self.text in text:
            self.sent = True
            _thread.interrupt_main()

    def tick(self) -> None:
        """Ticked, the map's thread wakes every second: it takes the interrupt while the batch still runs."""

    def close(self) -> None:
        pass


def test_a_run_after_an_interrupt_reads_back_the_answers_at_the_provider_before_submitting_anything_new(environment, tmp_path):
    texts = [f"word {n}" for n in range(40)]  # more than are sent alone first
    store = str(tmp_path / "map.sqlite")
    events: list[str] = []
    submit, results = OpenAIBatches.submit, OpenAIBatches.results

    async def logged_submit(self, endpoint, lines, intent):
        events.append("submit")
        return await submit(self, endpoint, lines, intent)

    async def logged_results(self, state):
        events.append(f"results of {state.id}")
        return await results(self, state)

    environment.setattr(OpenAIBatches, "submit", logged_submit)
    environment.setattr(OpenAIBatches, "results", logged_results)
    # The first item's batch (sent alone) ends at once, the others' only when the test ends it.
    with serve(environment, BatchServer(one_round, delays=[0.5, 270.0], lifetime=280.0)) as server, nh.run(executor()):
        # Every item but the first; interrupted while the batch of the others (the second) runs at the provider.
        previous = use_renderer(lambda total, usage, progress: InterruptOnStatus(total, usage, "batch_2: in_progress"))
        try:
            with pytest.raises(KeyboardInterrupt):
                nh.map(shout, texts[1:], batch_api=True, store=store, progress=False)
        finally:
            use_renderer(previous)
        assert server.batches["batch_2"].status == "in_progress"
        server._end(server.batches["batch_2"], "completed")  # its answers wait at the provider
        events.clear()

        result = nh.map(shout, texts, batch_api=True, store=store, progress=False)

    assert list(result) == [text.upper() + "!" for text in texts]
    assert "results of batch_2" in events and "submit" in events
    assert events.index("results of batch_2") < events.index("submit"), events


def test_a_refused_upload_leaves_no_store_file(environment, tmp_path):
    texts = [f"word {n}" for n in range(40)]
    with serve(environment, BatchServer(one_round, refuse_submission=404)), nh.run(executor()):
        with pytest.raises(nh.MapStoppedError):
            nh.map(shout, texts, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(tmp_path.iterdir()) == []


def test_an_emptied_store_file_another_process_is_writing_to_is_kept(tmp_path):
    path = tmp_path / "map.sqlite"
    records = BatchRecords(path)
    records.running("map")  # nothing yet: the file is not made
    assert not path.exists()
    records.ended("batch_1", "completed")  # the first write makes the file, which holds no row
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # a second kernel on the same store, in the middle of a write
    try:
        records.close()
    finally:
        other.execute("ROLLBACK")
        other.close()

    assert path.exists()


def test_an_emptied_store_file_nobody_else_holds_is_removed(tmp_path):
    path = tmp_path / "map.sqlite"
    records = BatchRecords(path)
    records.ended("batch_1", "completed")
    records.close()

    assert list(tmp_path.iterdir()) == []
