"""`nighthawk.map(..., batch_api=True)` against a local server speaking OpenAI's Batch API and Anthropic's
Message Batches API (the tests taking `provider` run against each); a map of the 12 `TEXTS` makes two batches
of 12 lines (`support.batch_maps`). A batch that cannot be submitted: test_map_batch_refusals.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh
from nighthawk.batch.store import session_store
from support.batch_maps import EXPECTED, MODELS, TEXTS, environment, executor, provider, serve, shout, two_rounds
from support.batch_server import BatchServer
from support.openai_server import RecordedRequest, ScriptItem, Status

__all__ = ["environment", "provider"]  # fixtures

pytestmark = pytest.mark.usefixtures("fresh_session_store")

TESTS = Path(__file__).resolve().parents[1]


def first_round(bodies: list[dict]) -> list[str]:
    """The bodies sent before any tool result, without `stream` (a direct Anthropic request streams, a batch
    line cannot), as sorted JSON."""
    requests = [RecordedRequest(index=0, path=path, connection=0, body=body) for path, body in bodies]
    return sorted(json.dumps({**r.body, "stream": None}, sort_keys=True) for r in requests if not r.tool_results)


def first_batch(server: BatchServer) -> str:
    return next(iter(server.batches))


def test_batch_map_returns_what_the_direct_map_returns_without_one_direct_request(environment, tmp_path, provider):
    with serve(environment, BatchServer(two_rounds)) as server, nh.run(executor(provider)):
        direct = nh.map(shout, TEXTS, progress=False)
        direct_bodies = first_round([(request.path, request.body) for request in server.requests])
        session_store().clear()
        server.direct_requests, server.requests[:] = 0, []
        batched = nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(batched) == list(direct) == EXPECTED
    assert server.direct_requests == 0
    assert len(server.batches) == 2  # one per round
    assert all(batch.anthropic == (provider == "anthropic") for batch in server.batches.values())
    lines = [(line["url"], line["body"]) for batch in server.batches.values() for line in batch.lines]
    assert first_round(lines) == direct_bodies  # the same requests, key for key


def test_a_responses_api_model_batches_on_the_responses_endpoint(environment, tmp_path):
    with serve(environment, BatchServer(two_rounds)) as server, nh.run(executor("openai-responses:gpt-4o-mini")):
        result = nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(result) == EXPECTED
    assert server.direct_requests == 0
    assert {batch.endpoint for batch in server.batches.values()} == {"/v1/responses"}


def test_without_store_the_batches_are_recorded_in_the_working_directory(environment, tmp_path):
    environment.chdir(tmp_path)
    with serve(environment, BatchServer(two_rounds)), nh.run(executor()):
        nh.map(shout, TEXTS, batch_api=True, progress=False)

    assert (tmp_path / "nighthawk-batches.sqlite").exists()


def test_batch_map_costs_half_the_direct_price(environment, tmp_path, provider):
    with serve(environment, BatchServer(two_rounds)), nh.run(executor(provider)):
        direct = nh.map(shout, TEXTS, progress=False)
        session_store().clear()
        batched = nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert batched.usage.requests == direct.usage.requests == 2 * len(TEXTS)
    assert batched.usage.input_tokens == direct.usage.input_tokens > 0
    assert batched.usage.cost_usd == pytest.approx(direct.usage.cost_usd / 2)


def test_a_failed_line_is_retried_in_the_next_batch(environment, tmp_path, provider):
    failed: list[str] = []

    def script(request: RecordedRequest) -> ScriptItem:
        if "word 3" in json.dumps(request.body) and not failed:
            failed.append("word 3")
            return Status(500, "the model crashed")
        return two_rounds(request)

    with serve(environment, BatchServer(script)) as server, nh.run(executor(provider)):
        result = nh.map(shout, TEXTS, batch_api=True, retries=1, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(result) == EXPECTED
    assert server.direct_requests == 0
    assert sum(len(batch.lines) for batch in server.batches.values()) == 2 * len(TEXTS) + 1


def test_a_failed_line_without_retries_is_reported_for_its_item(environment, tmp_path, provider):
    def script(request: RecordedRequest) -> ScriptItem:
        if "word 3" in json.dumps(request.body):
            return Status(400, "this prompt is not allowed")
        return two_rounds(request)

    with serve(environment, BatchServer(script)), nh.run(executor(provider)):
        result = nh.map(shout, TEXTS, batch_api=True, on_error="collect", store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(result.errors) == [3]
    assert "this prompt is not allowed" in str(result.errors[3])
    assert [value for index, value in enumerate(result) if index != 3] == EXPECTED[:3] + EXPECTED[4:]


@pytest.mark.parametrize(
    ("model", "ending", "said"),
    [("openai", "expired", "ended expired"), ("openai", "failed", "scripted batch failure"), ("anthropic", "expired", "expired")],
)
def test_a_batch_that_ends_without_answers_fails_its_items_naming_why(environment, tmp_path, model, ending, said):
    with serve(environment, BatchServer(two_rounds, ending=[ending])) as server, nh.run(executor(model)):
        result = nh.map(shout, TEXTS, batch_api=True, on_error="collect", store=str(tmp_path / "map.sqlite"), progress=False)

    assert sorted(result.errors) == list(range(len(TEXTS)))
    assert said in str(result.errors[0]) and first_batch(server) in str(result.errors[0])


def test_the_items_of_an_expired_batch_go_again_in_a_new_batch_with_retries(environment, tmp_path, provider):
    with serve(environment, BatchServer(two_rounds, ending=["expired"])) as server, nh.run(executor(provider)):
        result = nh.map(shout, TEXTS, batch_api=True, retries=1, store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(result) == EXPECTED
    assert len(server.batches) == 3


def test_a_model_without_a_batch_api_is_refused_before_anything_is_sent(environment, tmp_path):
    called: list[object] = []

    def respond(messages: object, info: object) -> object:
        called.append(messages)
        raise AssertionError("no request may be sent")

    scripted = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(respond)))
    with nh.run(scripted), pytest.raises(nh.NighthawkError, match="has no Batch API"):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)
    assert called == []


def test_batch_api_refuses_a_value_it_does_not_know(environment):
    with pytest.raises(ValueError, match="batch_api"):
        nh.map(shout, TEXTS, batch_api="yes")  # type: ignore[arg-type]


# --- two processes ------------------------------------------------------------------------------------------

CHILD = textwrap.dedent(
    '''
    import json, sys
    import nighthawk as nh

    @nh.natural_function
    def shout(text: str) -> str:
        """natural
        Shout <text>.
        """

    mode, store, model = sys.argv[1], sys.argv[2], sys.argv[3]
    texts = [f"word {n}" for n in range(12)]
    configuration = nh.StepExecutorConfiguration(model=model, max_retries=0)
    with nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)):
        result = nh.map(shout, texts, batch_api={"cancel": "cancel", "resubmit": "resubmit"}.get(mode, True), store=store, progress=True)
    print(json.dumps(list(result)), flush=True)
    '''
)


def child(tmp_path: Path, server: BatchServer, mode: str, provider: str, store: str = "map.sqlite") -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, str(script), mode, str(tmp_path / store), MODELS[provider]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )


def interrupt_after_submitting(process: subprocess.Popen[str]) -> str:
    """Send SIGINT once the child says its first batch is submitted; its whole stderr."""
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if "submitted" in line:
            process.send_signal(signal.SIGINT)
            break
    rest = process.communicate(timeout=60)[1]
    return "".join(seen) + rest


def test_a_second_process_reattaches_to_the_batch_the_first_submitted(environment, tmp_path, provider):
    with serve(environment, BatchServer(two_rounds, delay=2.0, lifetime=90.0)) as server:
        stderr = interrupt_after_submitting(child(tmp_path, server, "run", provider))
        assert 'batch_api="cancel"' in stderr  # the interrupt says how to cancel what keeps running
        assert len(server.batches) == 1
        second = child(tmp_path, server, "run", provider)
        out, err = second.communicate(timeout=60)

    assert second.returncode == 0, err
    assert json.loads(out) == EXPECTED
    assert len(server.batches) == 2  # one per round: the first process's batch was collected, not sent again
    assert server.direct_requests == 0


def test_cancel_cancels_the_running_batch_and_the_next_run_submits_anew(environment, tmp_path, provider):
    # The first batch runs long enough for a second process to start and cancel it.
    with serve(environment, BatchServer(two_rounds, delays=[30.0], lifetime=90.0)) as server:
        interrupt_after_submitting(child(tmp_path, server, "run", provider))
        cancelling = child(tmp_path, server, "cancel", provider)
        out, err = cancelling.communicate(timeout=60)
        assert cancelling.returncode == 0, err
        assert server.cancelled == [first_batch(server)], err
        again = child(tmp_path, server, "run", provider)
        out, err = again.communicate(timeout=60)

    assert json.loads(out) == EXPECTED
    assert len(server.batches) == 3  # the cancelled one, then both rounds anew


def interrupt_while_submitting(process: subprocess.Popen[str], server: BatchServer) -> str:
    """Send SIGINT once the server has made the child's first batch, before the child hears its id; its stderr."""
    deadline = time.monotonic() + 60
    while not server.batches and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    return process.communicate(timeout=60)[1]


def test_a_batch_made_while_the_run_was_interrupted_submitting_it_is_found_not_paid_again(environment, tmp_path, provider):
    # Each batch-creating request is answered 3 s after its batch was made: the child is interrupted between.
    with serve(environment, BatchServer(two_rounds, create_delay=3.0, lifetime=90.0)) as server:
        stderr = interrupt_while_submitting(child(tmp_path, server, "run", provider), server)
        assert "being submitted" in stderr and 'batch_api="cancel"' in stderr
        assert "Task exception was never retrieved" not in stderr and "closed database" not in stderr, stderr
        second = child(tmp_path, server, "run", provider)
        out, err = second.communicate(timeout=60)

    assert second.returncode == 0, err
    assert json.loads(out) == EXPECTED
    assert len(server.batches) == 2  # the interrupted run's batch was found and collected, then round two
    assert server.batch_lines == 2 * len(TEXTS)


def test_the_progress_line_shows_how_the_batches_stand(environment, tmp_path, capsys, provider):
    with serve(environment, BatchServer(two_rounds, delay=1.0)), nh.run(executor(provider)):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=True)

    frames = capsys.readouterr().err.replace("\n", "\r").split("\r")
    drawn = [frame for frame in frames if frame.startswith("nighthawk.map ")]
    assert drawn and len(drawn) == len([frame for frame in frames if frame.strip()])  # no separate lines
    assert any("submitted (12 requests)" in frame for frame in drawn)
    assert any("in_progress, 0/12 done" in frame for frame in drawn)  # the provider's counts
    assert any("downloading results" in frame for frame in drawn)
    assert drawn[-1].startswith("nighthawk.map 12/12 | 2 batch(es) ended | 0 failed")  # the summary


# --- a batch list that cannot be read ----------------------------------------------------------------------

NOT_A_LIST = {"object": "page", "items": [], "note": "a proxy's own page"}


def test_a_batch_list_that_is_not_a_list_sends_nothing_again_and_says_what_may_be_running(environment, tmp_path, provider):
    # The first process is killed between the provider making its batch and hearing its id.
    with serve(environment, BatchServer(two_rounds, create_delay=3.0, lifetime=90.0)) as server:
        interrupt_while_submitting(child(tmp_path, server, "run", provider), server)
        (made,) = server.batches
        server.list_answer = NOT_A_LIST
        second = child(tmp_path, server, "run", provider)
        out, err = second.communicate(timeout=60)

    assert second.returncode != 0
    assert len(server.batches) == 1 and server.batch_lines == len(TEXTS)  # nothing paid twice
    assert "could not be read" in err and "nighthawk_intent" in err and 'batch_api="resubmit"' in err


def test_resubmit_sends_again_the_requests_of_a_batch_that_could_not_be_looked_up(environment, tmp_path):
    with serve(environment, BatchServer(two_rounds, create_delay=3.0, lifetime=90.0)) as server:
        interrupt_while_submitting(child(tmp_path, server, "run", "openai"), server)
        server.list_answer = NOT_A_LIST
        server.create_delay = 0.0
        again = child(tmp_path, server, "resubmit", "openai")
        out, err = again.communicate(timeout=60)

    assert again.returncode == 0, err
    assert json.loads(out) == EXPECTED
    assert len(server.batches) == 3  # the one that may run, then both rounds anew, as asked


@pytest.mark.parametrize("answer", ["<html>a proxy</html>", {"data": "none"}, {"data": [{"name": "not a batch"}]}])
def test_every_unreadable_list_answer_is_a_failed_lookup(environment, tmp_path, answer):
    from nighthawk.batch.batch_backend import UnreadableList
    from nighthawk.batch.batch_records import Intent
    from nighthawk.batch.openai_batches import OpenAIBatches
    from openai import AsyncOpenAI
    from nighthawk.threads import _loop

    with serve(environment, BatchServer(two_rounds, list_answer=answer)) as server:
        backend = OpenAIBatches(AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0))
        with pytest.raises(UnreadableList):
            _loop.run_sync(backend.find(Intent.new("map", "/v1/chat/completions", ["a"]), set()))


# --- cancel, the store file, what kept items cost -----------------------------------------------------------


def test_cancel_returns_the_ids_it_cancelled(environment, tmp_path, provider):
    with serve(environment, BatchServer(two_rounds, delays=[30.0], lifetime=90.0)) as server:
        interrupt_after_submitting(child(tmp_path, server, "run", provider))
        with nh.run(executor(provider)):
            cancelled = nh.map(shout, TEXTS, batch_api="cancel", store=str(tmp_path / "map.sqlite"), progress=False)

    assert list(cancelled) == server.cancelled == [first_batch(server)]


def test_the_cancel_snippet_of_the_docs_runs_as_written(environment, tmp_path):
    import re

    docs = (TESTS.parent / "docs" / "batch.md").read_text()
    (snippet,) = [block for block in re.findall(r"```python[^\n]*\n(.*?)```", docs, re.S) if '"cancel"' in block]
    environment.chdir(tmp_path)
    with serve(environment, BatchServer(two_rounds, delays=[30.0], lifetime=90.0)) as server:
        interrupt_after_submitting(child(tmp_path, server, "run", "openai", store="reviews.sqlite"))
        # The names the docs' earlier blocks made: the function (the child's) and the table.
        namespace = {"label": shout, "df": {"review": TEXTS, "stars": [5] * len(TEXTS)}}
        exec(compile(snippet, "docs/batch.md", "exec"), namespace)

    assert server.cancelled == [first_batch(server)]


def test_a_model_without_a_batch_api_leaves_no_store_file(environment, tmp_path):
    environment.chdir(tmp_path)
    scripted = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(lambda m, i: None)))
    with nh.run(scripted), pytest.raises(nh.NighthawkError, match="has no Batch API"):
        nh.map(shout, TEXTS, batch_api=True, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_later_process_answered_from_the_store_shows_the_cost_first_paid(environment, tmp_path, capsys):
    with serve(environment, BatchServer(two_rounds)), nh.run(executor()):
        first = nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)
        session_store().clear()  # as in a new process
        again = nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=True)

    assert (again.usage.requests, again.usage.items_kept) == (0, len(TEXTS))
    assert first.usage.cost_usd and again.usage.kept_cost_usd == pytest.approx(first.usage.cost_usd)
    line = capsys.readouterr().err.split("\r")[-1]
    assert f"{len(TEXTS)} kept (${first.usage.cost_usd:.4f} when run)" in line and "cost unknown" not in line


def test_equal_kept_items_count_what_was_paid_once(environment, tmp_path):
    with serve(environment, BatchServer(two_rounds)), nh.run(executor()):
        first = nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)
        session_store().clear()
        again = nh.map(shout, TEXTS * 3, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=False)

    assert again.usage.items_kept == 3 * len(TEXTS)
    assert again.usage.kept_cost_usd == pytest.approx(first.usage.cost_usd)


# --- the first line, before the batch client is built ----------------------------------------------------


def test_the_progress_line_is_drawn_before_the_batch_client_is_built(environment, tmp_path, capsys):
    from nighthawk.batch import batch_api

    building = batch_api._batched_model
    seen_while_building: list[str] = []

    def slow_to_build(*args, **kwargs):  # a cold process spends seconds here, loading the provider's SDK
        seen_while_building.append(capsys.readouterr().err)
        return building(*args, **kwargs)

    environment.setattr(batch_api, "_batched_model", slow_to_build)
    with serve(environment, BatchServer(two_rounds)), nh.run(executor()):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=True)

    assert seen_while_building and "nighthawk.map 0/12 | preparing the batch client" in seen_while_building[0]
    assert "preparing" not in capsys.readouterr().err.split("\r")[-1]  # the summary does not say it


def test_a_model_refused_while_the_line_shows_ends_the_line_saying_why(environment, tmp_path, capsys):
    scripted = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(lambda m, i: None)))
    with nh.run(scripted), pytest.raises(nh.NighthawkError, match="has no Batch API"):
        nh.map(shout, TEXTS, batch_api=True, store=str(tmp_path / "map.sqlite"), progress=True)

    err = capsys.readouterr().err
    assert err.endswith("\n")  # the line is ended: what prints next starts on its own line
    assert "stopped: NighthawkError" in err.split("\r")[-1]
    assert not (tmp_path / "map.sqlite").exists()
