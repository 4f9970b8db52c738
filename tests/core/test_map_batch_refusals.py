"""A batch map the provider refuses: a key it refuses, an upload or a batch it will not take, an address where
nothing listens. The map stops naming the cause, before sending anything or after one item's request, never
once every item has made its own; what it kept still reads back offline.
"""

from __future__ import annotations

import socket

import pytest

import nighthawk as nh
from nighthawk.batch import batch_api, batch_rounds
from nighthawk.batch.store import session_store
from support.batch_maps import EXPECTED, TEXTS, environment, executor, provider, serve, shout, two_rounds
from support.batch_server import BatchServer

__all__ = ["environment", "provider"]  # fixtures

pytestmark = pytest.mark.usefixtures("fresh_session_store")

BIG = [f"word {n}" for n in range(200)]
"""More items than `batch_rounds.ALONE_FIRST_ABOVE`: the map sends its first request alone."""


def counting_shout(started: list[str]):
    """`shout`, noting each text its Python starts with in `started`."""

    @nh.natural_function
    def counted(text: str) -> str:
        started.append(text)
        """natural
        Shout <text>.
        """

    return counted


# --- the first look at the provider ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "said"),
    [(401, "the provider refuses the API key"), (403, "the API key may not use this model"), (404, "the provider knows no such model")],
)
def test_a_refused_submission_stops_the_map_naming_its_cause(environment, tmp_path, provider, status, said):
    with serve(environment, BatchServer(two_rounds, refuse_submission=status)) as server, nh.run(executor(provider)):
        with pytest.raises(nh.MapStoppedError) as caught:
            nh.map(shout, TEXTS * 20, batch_api=True, on_error="collect", store=str(tmp_path / "map.sqlite"), progress=False)

    message = str(caught.value)
    assert f"the map stopped: the batch could not be submitted: {said}" in message and f"(HTTP {status})" in message
    assert "items in a row" not in message and "Try again later" not in message
    assert server.refused_submissions == 1 and not server.batches


def test_a_refused_submission_counts_no_request(environment, tmp_path, provider):
    with serve(environment, BatchServer(two_rounds, refuse_submission=401)), nh.run(executor(provider)):
        with pytest.raises(nh.MapStoppedError) as caught:
            nh.map(shout, TEXTS, batch_api=True, on_error="collect", store=str(tmp_path / "map.sqlite"), progress=False)

    assert caught.value.partial.usage.requests == 0
    assert caught.value.partial.usage.cost_usd == 0.0


def test_a_refused_key_stops_the_map_before_any_batch_is_uploaded(environment, tmp_path, provider):
    environment.setattr(batch_rounds, "PROBE_WAIT_S", 60.0)  # the items start after the answer, however slow
    with serve(environment, BatchServer(two_rounds, refuse_key=401)) as server, nh.run(executor(provider)):
        with pytest.raises(nh.MapStoppedError) as caught:
            nh.map(shout, TEXTS * 20, batch_api=True, on_error="collect", store=str(tmp_path / "map.sqlite"), progress=False)

    message = str(caught.value)
    assert message.startswith(
        "the map stopped before sending anything: the batch could not be submitted: the provider refuses the API key "
        "(HTTP 401). No item finished"
    )
    assert [path for path in server.refused_paths if path.startswith("POST")] == []  # the first look told it all
    assert caught.value.partial.usage.requests == 0


def test_a_refused_key_stops_the_map_before_its_function_runs(environment, tmp_path):
    environment.setattr(batch_rounds, "PROBE_WAIT_S", 60.0)  # the items start after the answer, however slow
    started: list[str] = []
    with serve(environment, BatchServer(two_rounds, refuse_key=401)), nh.run(executor()):
        with pytest.raises(nh.MapStoppedError) as caught:
            nh.map(counting_shout(started), TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert started == []
    assert caught.value.affected == 0 and caught.value.cause == "the batch could not be submitted: the provider refuses the API key (HTTP 401)"


def test_a_batch_map_whose_answers_are_all_kept_returns_them_with_the_key_refused(environment, tmp_path):
    store = str(tmp_path / "map.sqlite")
    with serve(environment, BatchServer(two_rounds)), nh.run(executor()):
        first = nh.map(shout, TEXTS, batch_api=True, store=store, progress=False)
    session_store().clear()  # a later session: the answers come from the store file
    with serve(environment, BatchServer(two_rounds, refuse_key=401)) as server, nh.run(executor()):
        again = nh.map(shout, TEXTS, batch_api=True, store=store, progress=False)

    assert list(again) == list(first) == EXPECTED
    assert again.usage.items_kept == len(TEXTS)
    assert [path for path in server.refused_paths if path.startswith("POST")] == []


def test_an_empty_batch_map_returns_nothing_with_the_key_refused(environment, tmp_path):
    with serve(environment, BatchServer(two_rounds, refuse_key=401)), nh.run(executor()):
        result = nh.map(shout, [], batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(result) == []


@pytest.mark.parametrize("status", [404, 403])
def test_a_provider_that_does_not_show_its_batch_list_still_runs_a_batch_map(environment, tmp_path, provider, status):
    with serve(environment, BatchServer(two_rounds, list_status=status)) as server, nh.run(executor(provider)):
        result = nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(result) == EXPECTED
    assert len(server.batches) == 2


def test_a_batch_map_where_nothing_listens_stops_naming_the_cause(environment, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    environment.setattr(batch_rounds, "PROBE_WAIT_S", 60.0)  # the items start after the answer (the SDK retries it)
    with nh.run(executor()), pytest.raises(nh.MapStoppedError, match="could not be submitted: nothing listens") as caught:
        nh.map(shout, TEXTS, batch_api=True, on_error="collect", store=str(tmp_path / "map.sqlite"), progress=False)
    assert caught.value.partial.usage.requests == 0
    assert "stopped before sending anything" in str(caught.value) and "0 finished" not in str(caught.value)


# --- a big map's first request, sent alone -----------------------------------------------------------------


@pytest.mark.parametrize("status", [403, 404])
def test_a_refused_batch_stops_a_big_map_once_its_first_item_has_asked(environment, tmp_path, provider, status):
    environment.setattr(batch_api, "GATHER_S", 3600.0)  # the first request does not wait to be gathered
    started: list[str] = []
    with serve(environment, BatchServer(two_rounds, refuse_submission=status)) as server, nh.run(executor(provider)):
        with pytest.raises(nh.MapStoppedError) as caught:
            nh.map(counting_shout(started), BIG, batch_api=True, on_error="collect", store=str(tmp_path / "map.sqlite"), progress=False)

    assert started == BIG[:1]  # no other item ran: the provider's answer to the first request decided
    assert server.refused_submissions == 1 and not server.batches
    assert caught.value.cause.startswith("the batch could not be submitted: ") and f"(HTTP {status})" in caught.value.cause
    assert "199 items were not run" in str(caught.value)
    assert caught.value.partial.usage.requests == 0


def test_a_big_map_whose_first_batch_fails_for_a_passing_reason_goes_on_until_it_gives_up(environment, tmp_path):
    environment.setattr(batch_api, "GATHER_S", 3.0)
    started: list[str] = []
    with serve(environment, BatchServer(two_rounds, refuse_submission=500)) as server, nh.run(executor()):
        with pytest.raises(nh.MapStoppedError) as caught:
            nh.map(
                counting_shout(started), BIG, batch_api=True, on_error="collect", store=str(tmp_path / "map.sqlite"), progress=False,
                give_up_after_s=3,
            )

    # A 500 may pass: the map opens (other items start) and submits again, as direct requests would be tried
    # again, until `give_up_after_s` without a success stops it. While batches fail, the items already started
    # are tried again before new ones start, so how many started depends on the machine's speed.
    assert server.refused_submissions >= 2 and len(started) > 1
    assert caught.value.cause.startswith("no item succeeded in ")
    assert caught.value.cause.endswith("of failures that usually pass (the batch could not be submitted: HTTP 500; give_up_after_s=3)")


def test_a_refused_batch_is_not_uploaded_again_for_the_items_after_it(environment, tmp_path):
    @nh.natural_function
    def careful(text: str) -> str:
        try:
            """natural
            Shout <text>.
            """
        except Exception:  # noqa: BLE001 - whatever the failed block raises
            return "not shouted"
        return text

    with serve(environment, BatchServer(two_rounds, refuse_submission=403)) as server, nh.run(executor()):
        result = nh.map(careful, BIG, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(result) == ["not shouted"] * len(BIG)  # the function took each failure itself: nothing stopped
    assert server.refused_submissions == 1  # the refusal was remembered, not asked again per item


def test_a_big_map_sends_its_first_request_alone_and_the_rest_of_the_round_together(environment, tmp_path, provider):
    environment.setattr(batch_api, "GATHER_S", 3.0)  # the 199 others gather into one batch on a slow machine too
    with serve(environment, BatchServer(two_rounds)) as server, nh.run(executor(provider)):
        result = nh.map(shout, BIG, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(result) == [text.upper() + "!" for text in BIG]
    sizes = [len(batch.lines) for batch in server.batches.values()]
    # The first round: one request alone, then all the others together (with the first item's second request
    # when its answer came back before they had all gathered).
    assert sizes[0] == 1 and sizes[1] in (len(BIG) - 1, len(BIG))
    assert server.batch_lines == 2 * len(BIG)  # every request of both rounds paid once
