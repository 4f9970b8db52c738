"""`nighthawk.ray.map_batches`: a natural function over a Ray dataset, on a local two-CPU Ray cluster.

The model is scripted and deterministic: it reads the ticket number from the step's prompt and answers with
a label derived from it, so the same rows give the same answers wherever they run. Skipped when Ray is not
installed, unless `NIGHTHAWK_REQUIRE_RAY=1` (the test script sets it), when it fails instead.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("ray") is None:
    _reason = 'the Ray tests need Ray Data (pip install "nighthawk-jupyter[ray]")'
    if os.environ.get("NIGHTHAWK_REQUIRE_RAY") == "1":
        pytest.fail(_reason, pytrace=False)
    pytest.skip(_reason, allow_module_level=True)

# Before Ray is imported (it reads them then; its workers inherit them): no auth token file in the home
# folder, and every address on loopback (Ray would otherwise bind its node to the machine's own address).
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

import nighthawk as nh  # noqa: E402
import nighthawk.ray  # noqa: E402

pytestmark = [
    # A cluster that stops answering (see the engineering notes on two-CPU machines) fails the test, not CI.
    pytest.mark.timeout(300),
    # Ray Data's own settings object warns about its own deprecated fields when it is copied to the actors.
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context"),
    pytest.mark.usefixtures("fresh_session_store"),
]

ROWS = 500

# The actors cannot import this test module (it is not on their path when the suite runs from an installed
# package): send what it defines by value, as a notebook's functions are sent.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local two-CPU cluster, its logs in a temporary folder; yields its address."""
    temp_dir = tempfile.mkdtemp(prefix="nh-ray-")  # short: Ray's socket paths live under it
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@nh.natural_function
def triage(ticket: str, priority: int) -> str:
    """natural
    Route <ticket> (priority <priority>) to a team.
    """


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The label is a function of the ticket number in the prompt; every 50th ticket is refused."""
    number = int(re.search(r"ticket-(\d+)", str(messages[0]))[1])  # type: ignore[index]
    if number % 50 == 7:
        outcome: dict[str, Any] = {"kind": "raise", "raise_message": f"no team for ticket {number}"}
        outcome["raise_error_type"] = "ValueError"
    else:
        outcome = {"kind": "return", "return_expression": f"{'team-' + str(number % 5)!r} + '/p' + str(priority)"}
    return ModelResponse(parts=[ToolCallPart("nh_outcome", outcome)])


def executor(model: Callable[[list[ModelMessage], AgentInfo], ModelResponse] = answer) -> nh.AgentStepExecutor:
    return nh.AgentStepExecutor.from_configuration(
        configuration=nh.StepExecutorConfiguration(model=FunctionModel(model, model_name="scripted-triage"))
    )


class Logged:
    """Answers as `answer` does (every ticket routed) and writes each ticket it is asked about to `log`, one line
    per request from whichever actor asks: the requests the model really received. Tickets `refused` says
    so for are refused instead."""

    def __init__(self, log: Path, refused: Callable[[int], bool] = lambda number: False) -> None:
        self.log = log
        self.refused = refused

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        number = int(re.search(r"ticket-(\d+)", str(messages[0]))[1])  # type: ignore[index]
        with self.log.open("a") as log:
            log.write(f"{number}\n")
        if self.refused(number):
            outcome = {"kind": "raise", "raise_message": f"provider down for ticket {number}", "raise_error_type": "ValueError"}
        else:
            outcome = {"kind": "return", "return_expression": f"{'team-' + str(number % 5)!r} + '/p' + str(priority)"}
        return ModelResponse(parts=[ToolCallPart("nh_outcome", outcome)])


class FirstTime:
    """True the first time a ticket is asked about in this actor, false after."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def __call__(self, number: int) -> bool:
        first = number not in self.seen
        self.seen.add(number)
        return first


class Meeting:
    """Answers as `answer` does, once this actor has written its process id to `log` and seen another actor's
    there (it waits at most 20 s, once): a batch is held until the other actor has one too."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.met = False

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not self.met:
            with self.log.open("a") as log:
                log.write(f"{os.getpid()}\n")
            for _ in range(200):
                if len(set(self.log.read_text().split())) >= 2:
                    break
                await asyncio.sleep(0.1)
            self.met = True
        return answer(messages, info)


def asked(log: Path) -> list[int]:
    return sorted(int(line) for line in log.read_text().split()) if log.exists() else []


def team(number: int) -> str:
    return f"team-{number % 5}/p{number % 3}"


def tickets(count: int) -> list[dict[str, Any]]:
    return [{"ticket": f"ticket-{n}", "priority": n % 3} for n in range(count)]


def by_ticket(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: int(row["ticket"].split("-")[1]))


def routed(rows: list[dict[str, Any]], **options: Any) -> list[dict[str, Any]]:
    """The rows through `triage` on the cluster's actors, in ticket order."""
    options = {"executor": executor, **options}
    dataset = nighthawk.ray.map_batches(
        ray.data.from_items(rows), triage, input_columns=["ticket", "priority"], output_column="team", **options
    )
    return by_ticket(dataset.take_all())


def test_rows_get_exactly_the_results_of_a_local_map(cluster: str) -> None:
    rows = tickets(ROWS)
    with nh.run(executor()):
        local = nh.map(
            triage, [row["ticket"] for row in rows], [row["priority"] for row in rows], on_error="collect", progress=False
        )
    mapped = routed(rows, on_error="collect")
    assert [row["team"] for row in mapped] == list(local)
    assert [row["ticket"] for row in mapped] == [row["ticket"] for row in rows]


def test_collected_failures_leave_their_message_in_the_error_column(cluster: str) -> None:
    failed = [row for row in routed(tickets(60), on_error="collect") if row["team_error"] is not None]
    assert [(row["ticket"], row["team"], row["team_error"]) for row in failed] == [
        ("ticket-7", None, "ValueError: no team for ticket 7"),
        ("ticket-57", None, "ValueError: no team for ticket 57"),
    ]


def refuse_priority_two(proposal: Any) -> Any:
    """A commit hook that refuses every row of priority 2."""
    if str(proposal.proposed_return_value).endswith("/p2"):
        return nh.oversight.Reject("priority 2 goes to a person")
    return nh.oversight.Accept()


def test_oversight_in_force_when_the_dataset_is_made_oversees_the_rows(cluster: str) -> None:
    with nh.run(executor()), nh.scope(oversight=nh.oversight.Oversight(inspect_step_commit=refuse_priority_two)):
        mapped = routed(tickets(6), on_error="collect")
    assert [row["team"] for row in mapped] == ["team-0/p0", "team-1/p1", None, "team-3/p0", "team-4/p1", None]
    assert "priority 2 goes to a person; the block has no write binding to commit" in mapped[2]["team_error"]


def test_a_failed_row_stops_the_dataset_naming_the_row(cluster: str) -> None:
    failure = r"the row \{'ticket': 'ticket-7', 'priority': 1\} failed: ValueError: no team for ticket 7"
    with pytest.raises(Exception, match=failure) as caught:  # Ray's own error, carrying ours
        routed(tickets(10))
    assert 'on_error="collect"' in str(caught.value)


@pytest.mark.timeout(120)
def test_a_row_whose_call_failed_runs_again_with_retries(cluster: str, tmp_path: Path) -> None:
    log = tmp_path / "asked.log"
    mapped = routed(tickets(12), executor=lambda: executor(Logged(log, refused=FirstTime())), retries=1, batch_size=3)
    assert [row["team"] for row in mapped] == [team(n) for n in range(12)]
    assert [row["team_requests"] for row in mapped] == [2] * 12  # each row's usage covers both of its attempts
    assert asked(log) == sorted([*range(12), *range(12)])


def test_a_second_run_on_the_same_store_asks_only_for_the_rows_the_first_did_not_finish(cluster: str, tmp_path: Path) -> None:
    store = tmp_path / "triage.sqlite"
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    # The first run loses the provider for every third ticket; the second finds it back.
    first = routed(
        tickets(24),
        executor=lambda: executor(Logged(first_log, refused=lambda number: number % 3 == 0)),
        on_error="collect",
        store=str(store),
        batch_size=4,
    )
    assert [row["ticket"] for row in first if row["team"] is None] == [f"ticket-{n}" for n in range(0, 24, 3)]
    second = routed(tickets(24), executor=lambda: executor(Logged(second_log)), store=str(store), batch_size=4)
    assert asked(second_log) == list(range(0, 24, 3))
    assert [row["team"] for row in second] == [team(n) for n in range(24)]
    assert [row["team_requests"] for row in second] == [1 if n % 3 == 0 else 0 for n in range(24)]


def test_a_budget_around_the_dataset_bounds_the_requests_of_all_actors_together(cluster: str, tmp_path: Path) -> None:
    log = tmp_path / "asked.log"
    with nh.budget(requests=10):
        mapped = routed(
            tickets(40), executor=lambda: executor(Logged(log)), on_error="collect", actors=2, concurrency=4, batch_size=4
        )
    assert 0 < len(asked(log)) <= 10
    done = [row for row in mapped if row["team"] is not None]
    assert 0 < len(done) <= len(asked(log))
    stop = (
        "BudgetExceededError: the cell budget `requests` of 10 was reached (10); the block has no write binding to "
        "commit; changes made in place to objects (such as `items.append(...)`) are not undone. "
        "Raise it with `nighthawk.budget(requests=...)` (in a notebook: `%nighthawk limits cell.requests=...` "
        "or `%%natural --budget requests=...`)."
    )
    assert {row["team_error"] for row in mapped if row["team"] is None} == {stop}


def test_a_budget_stop_ends_the_dataset_naming_the_budget_with_on_error_raise(cluster: str, tmp_path: Path) -> None:
    log = tmp_path / "asked.log"
    stop = r"the dataset stopped at its budget: BudgetExceededError: the cell budget `requests` of 5 was reached"
    with nh.budget(requests=5), pytest.raises(Exception, match=stop):  # Ray's own error, carrying ours
        routed(tickets(40), executor=lambda: executor(Logged(log)), concurrency=4, batch_size=4)
    assert len(asked(log)) <= 5


def test_a_group_shared_with_the_actors_counts_what_they_spent_for_the_steps_run_here(cluster: str, tmp_path: Path) -> None:
    with nh.budget(requests=6):
        routed(tickets(6), executor=lambda: executor(Logged(tmp_path / "asked.log")), batch_size=3)
        with nh.run(executor()), pytest.raises(nh.BudgetExceededError, match=r"the cell budget `requests` of 6 was reached"):
            triage("ticket-100", 1)


def test_rows_read_by_ray_tasks_are_mapped_without_the_actors_starving_the_reads(cluster: str) -> None:
    # With whole-CPU actors on two CPUs, a dataset that Ray reads with tasks of its own never finishes.
    read = ray.data.range(40).map(lambda row: {"ticket": f"ticket-{row['id']}", "priority": row["id"] % 3})
    dataset = nighthawk.ray.map_batches(
        read, triage, input_columns=["ticket", "priority"], output_column="team", executor=executor, on_error="collect"
    )
    assert len(dataset.take_all()) == 40


def test_both_actors_map_rows_of_a_pandas_dataframe(cluster: str, tmp_path: Path) -> None:
    pandas = pytest.importorskip("pandas")
    log = tmp_path / "actors.log"
    frame = pandas.DataFrame(tickets(300))  # `from_pandas` makes one block of it
    dataset = nighthawk.ray.map_batches(
        ray.data.from_pandas(frame), triage, input_columns=["ticket", "priority"], output_column="team",
        executor=lambda: executor(Meeting(log)), actors=2, on_error="collect",
    )
    assert len(dataset.take_all()) == 300
    assert len(set(log.read_text().split())) == 2


def test_each_row_carries_its_own_usage(cluster: str) -> None:
    row = routed(tickets(12), on_error="collect")[3]
    assert row["team_requests"] == 1
    assert row["team_input_tokens"] > 0
    assert row["team_output_tokens"] > 0
    assert row["team_cost_usd"] is None  # a scripted model has no price


SCRIPT = '''
import asyncio
import json
import os
import sys

import ray
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """


class Gated:
    """Holds each request until four are in flight in this actor (at most 2 s): rows that were really mapped
    together answer `together`, rows run one at a time answer `alone`."""

    def __init__(self):
        self.in_flight = self.peak = 0

    async def __call__(self, messages, info):
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        for _ in range(200):
            if self.peak >= 4:
                break
            await asyncio.sleep(0.01)
        self.in_flight -= 1
        expression = "text.upper() + ' together'" if self.peak >= 4 else "'alone'"
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": expression})])


def executor():
    return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(Gated())))


# Like a notebook cell's code on a remote machine: no file the actors could read the function from.
os.remove(__file__)
ray.init(address=sys.argv[1], log_to_driver=False)
rows = ray.data.from_items([{"text": f"row {n}"} for n in range(16)])
mapped = nh.ray.map_batches(
    rows, shout, input_columns=["text"], output_column="loud", executor=executor, concurrency=4, batch_size=8
)
print(json.dumps(sorted(row["loud"] for row in mapped.take_all())))
ray.shutdown()
'''


def test_a_natural_function_of_a_main_script_runs_on_the_actors_with_rows_in_flight_together(
    cluster: str, tmp_path: Path
) -> None:
    script = tmp_path / "tickets_job.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, str(script), cluster], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == sorted(f"ROW {n} together" for n in range(16))


NESTED_SCRIPT = '''
import json
import os
import sys

import ray
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh


@nh.natural_function
def headline(text: str) -> str:
    def shout(words: str) -> str:
        """natural
        Shout <words>.
        """

    return shout(text) + "!"


def executor():
    def answer(messages, info):
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "words.upper()"})])

    return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(answer)))


# Like a notebook cell's code on a remote machine: no file the actors could read either function from.
os.remove(__file__)
ray.init(address=sys.argv[1], log_to_driver=False)
rows = ray.data.from_items([{"text": f"row {n}"} for n in range(6)])
mapped = nh.ray.map_batches(rows, headline, input_columns=["text"], output_column="loud", executor=executor, batch_size=3)
print(json.dumps(sorted(row["loud"] for row in mapped.take_all())))
ray.shutdown()
'''


def test_a_natural_function_defined_inside_one_of_a_main_script_runs_on_the_actors(cluster: str, tmp_path: Path) -> None:
    script = tmp_path / "nested_job.py"
    script.write_text(NESTED_SCRIPT)
    done = subprocess.run([sys.executable, str(script), cluster], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == sorted(f"ROW {n}!" for n in range(6))


STORE_SCRIPT = '''
import json
import os
import sys

import ray
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh


def answer(messages, info):
    return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "return", "return_expression": "text.upper()"})])


def executor():
    return nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(answer)))


@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """


def requests_on_the_actors(function):
    rows = ray.data.from_items([{"text": text} for text in TEXTS])
    mapped = nh.ray.map_batches(
        rows, function, input_columns=["text"], output_column="loud", executor=executor, store=sys.argv[2], batch_size=3
    )
    return sum(row["loud_requests"] for row in mapped.take_all())


first = shout


@nh.natural_function
def shout(text: str) -> str:  # the cell run again with its prompt edited
    """natural
    Shout <text>, and louder.
    """


# Like a notebook cell's code on a remote machine: no file the actors could read the functions from.
os.remove(__file__)
ray.init(address=sys.argv[1], log_to_driver=False)
TEXTS = [f"row {n}" for n in range(6)]
with nh.run(executor()):
    local = nh.map(first, TEXTS, store=sys.argv[2], progress=False).usage.requests
same = requests_on_the_actors(first)
edited = requests_on_the_actors(shout)
print(json.dumps({"local": local, "same": same, "edited": edited}))
ray.shutdown()
'''


@pytest.fixture(scope="module")
def store_job(cluster: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    """Requests of a `__main__` script sharing one store: a local map of six rows, the same rows on the actors,
    then on the actors again with the prompt edited."""
    folder = tmp_path_factory.mktemp("store-job")
    script = folder / "store_job.py"
    script.write_text(STORE_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), cluster, str(folder / "shout.sqlite")], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_rows_a_local_map_stored_are_not_asked_again_on_the_actors(store_job: dict[str, int]) -> None:
    assert (store_job["local"], store_job["same"]) == (6, 0)


def test_an_edited_prompt_asks_again_on_the_actors_despite_the_store(store_job: dict[str, int]) -> None:
    assert store_job["edited"] == 6


def test_nh_ray_is_reachable_from_a_plain_import_nighthawk() -> None:
    import nighthawk as plain

    assert plain.ray.map_batches is nighthawk.ray.map_batches


def test_an_executor_instead_of_its_factory_is_refused_before_anything_runs(cluster: str) -> None:
    rows = ray.data.from_items(tickets(2))
    with pytest.raises(TypeError, match=r"`executor` must be a function without arguments that makes the step executor"):
        nighthawk.ray.map_batches(rows, triage, input_columns=["ticket"], output_column="team", executor=executor())  # type: ignore[arg-type]
