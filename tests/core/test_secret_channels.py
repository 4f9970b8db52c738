"""Secret values stay in the process: each way out of a step, one behaviour per test.

The corpus in `test_secret_corpus.py` checks every secret against every channel at once; these tests pin the
individual behaviours and the messages, so a regression names what broke.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh
from nighthawk import events, telemetry
from nighthawk.replay import ReplayMissError, replay_executor
from scripting import Script, call, finish, scripted_executor

# Neutral names on purpose: a global named like a credential (`PASSWORD`) is a secret of every step of this
# module, so it would be masked whatever route each test checks, and a regression of that route would pass.
CHOSEN_TEXT = "hunter2-blue-42"  # a password a person chose
SHAPED_KEY = "sk-ant-api03-" + "Qm9vYmFyQmF6UXV4MTIzNDU2Nzg5"
KEYED_TEXT = "Tr0ub4dor&3x"  # a password found only under the `password` key of a dict


def evaluate(expression: str):
    return call("nh_eval", expression=expression)


@nh.natural_function
def use_password(db_password: str, conn: dict) -> None:
    """natural
    Connect with <db_password> and <conn>.
    """


def run_password_block(*rounds) -> Script:
    executor, script = scripted_executor(*rounds)
    with nh.run(executor):
        # Two values, so that each test sees the route it names: a local's name, or a dict key.
        use_password(CHOSEN_TEXT, {"host": "db", "password": KEYED_TEXT})
    return script


def test_eval_of_a_secret_named_variable_returns_the_placeholder() -> None:
    script = run_password_block([evaluate("db_password")], [finish()])
    assert script.last_tool_results() == ['{"value": "<masked>", "error": null}']


def test_str_of_a_dict_with_a_password_key_is_masked_in_the_tool_result() -> None:
    script = run_password_block([evaluate("str(conn)")], [finish()])
    (result,) = script.last_tool_results()
    assert KEYED_TEXT not in result
    assert json.loads(result)["value"] == "{'host': 'db', 'password': '<masked>'}"


def test_a_value_under_a_password_key_is_masked_away_from_its_key() -> None:
    script = run_password_block([evaluate("' / '.join(conn.values())")], [finish()])
    assert script.last_tool_results() == ['{"value": "db / <masked>", "error": null}']


def test_a_secret_assigned_to_an_innocent_name_is_committed_but_masked_in_events() -> None:
    seen: list[events.Event] = []
    executor, _ = scripted_executor([call("nh_assign", target_path="copied", expression="conn['password']")], [finish()])

    @nh.natural_function
    def copy_password(conn: dict) -> str:
        """natural
        Put the password of <conn> in <:copied>.
        """
        return copied  # noqa: F821 - bound by the block

    with events.listen(seen.append), nh.run(executor):
        assert copy_password({"password": CHOSEN_TEXT}) == CHOSEN_TEXT
    (assignment,) = [event for event in seen if isinstance(event, events.Assignment)]
    assert assignment.value == '"<masked>"'


def login(password: str) -> None:
    raise PermissionError(f"wrong password {password!r}")


def test_tool_error_message_masks_a_secret_quoted_by_the_exception() -> None:
    executor, script = scripted_executor([evaluate("login(db_password)")], [finish()])

    @nh.natural_function
    def attempt(db_password: str) -> None:
        """natural
        Log in with <db_password>.
        """

    with nh.run(executor):
        attempt(CHOSEN_TEXT)
    (result,) = script.last_tool_results()
    assert json.loads(result)["error"]["message"] == "PermissionError: wrong password '<masked>'"


@nh.natural_function
def fetch(api_key: str) -> str:
    """natural
    Fetch the page with <api_key> and return it.
    """


def reject_key(key: str) -> str:
    raise ValueError(f"token rejected: x{key}")  # no word boundary: only the value rule can see the key


def refuse(password: str) -> str:
    raise ConnectionRefusedError(f"relay refused {password!r}")


def test_retry_prompt_masks_the_exception_text_of_a_failing_return_expression() -> None:
    executor, script = scripted_executor(
        [finish("return", return_expression="reject_key(api_key)")], [finish("return", return_expression="'page'")]
    )
    with nh.run(executor):
        assert fetch(SHAPED_KEY) == "page"
    # pydantic-ai sends the correction as the outcome tool's (retried) return.
    (retry,) = [part for part in script.seen[-1][-1].parts if getattr(part, "tool_name", None) == "nh_outcome"]
    assert "token rejected: x<masked>" in str(retry.content)
    assert SHAPED_KEY not in str(retry.content)


def test_execution_error_of_a_failing_return_expression_masks_the_secret() -> None:
    executor, _ = scripted_executor(*[[finish("return", return_expression="refuse(db_password)")]] * 3)

    @nh.natural_function
    def send(db_password: str) -> str:
        """natural
        Send with <db_password>.
        """

    with nh.run(executor), pytest.raises(nh.ExecutionError, match=r"relay refused '<masked>'") as caught:
        send(CHOSEN_TEXT)
    assert CHOSEN_TEXT not in str(caught.value)
    assert CHOSEN_TEXT not in str(caught.value.__cause__)


def test_an_interpolated_secret_is_masked_in_the_user_prompt_and_the_step_started_event() -> None:
    @nh.natural_function
    def call_api(passphrase: str) -> None:
        f"""natural
        Unlock the vault with passphrase {passphrase}.
        """

    seen: list[events.Event] = []
    executor, script = scripted_executor([finish()])
    with events.listen(seen.append), nh.run(executor):
        call_api("orbit-velvet-canyon")
    (started,) = [event for event in seen if isinstance(event, events.StepStarted)]
    assert "passphrase <masked>." in started.program
    user_prompt = script.seen[0][0].parts[-1].content
    assert "passphrase <masked>." in user_prompt and "orbit-velvet-canyon" not in user_prompt


def test_a_password_echoed_in_raise_message_is_masked_in_span_attributes() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    executor, _ = scripted_executor([finish("raise", raise_message=f"refused for {CHOSEN_TEXT}")])
    with events.listen(telemetry.OpenTelemetryListener(tracer_provider=provider)), nh.run(executor):
        with pytest.raises(nh.ExecutionError, match="refused for <masked>"):
            use_password(CHOSEN_TEXT, {})
    (step,) = [span for span in exporter.get_finished_spans() if span.name == "nighthawk.step"]
    (raised,) = [event for event in step.events if event.name == "nighthawk.step.raised"]
    assert raised.attributes["nighthawk.step.raise_message"] == "refused for <masked>"


def test_pydantic_ai_tracing_records_no_secret_that_nighthawk_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # `instrument_all` sets a class attribute; monkeypatch puts the previous value back.
    monkeypatch.setattr(Agent, "_instrument_default", Agent._instrument_default)
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    rounds = [[evaluate("db_password"), evaluate("str(conn)"), evaluate("login(db_password)")]]
    rounds += [[finish("return", return_expression="refuse(db_password)")]] * 3
    executor, _ = scripted_executor(*rounds)

    @nh.natural_function
    def connect(db_password: str, conn: dict) -> str:
        """natural
        Connect with <db_password> and <conn>.
        """

    with nh.run(executor), pytest.raises(nh.ExecutionError):
        connect(CHOSEN_TEXT, {"password": CHOSEN_TEXT})
    spans = exporter.get_finished_spans()
    recorded = [str(value) for span in spans for value in (span.attributes or {}).values()]
    recorded += [str(value) for span in spans for event in span.events for value in (event.attributes or {}).values()]
    assert any("<masked>" in text for text in recorded)
    assert not [text for text in recorded if CHOSEN_TEXT in text]


def test_a_failing_listener_traceback_is_logged_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    def exporter(event: events.Event) -> None:
        if isinstance(event, events.StepStarted):
            raise RuntimeError(f"exporter down, cannot send with {CHOSEN_TEXT}")

    executor, _ = scripted_executor([finish()])
    with caplog.at_level(logging.ERROR, logger="nighthawk"), events.listen(exporter), nh.run(executor):
        use_password(CHOSEN_TEXT, {})
    (record,) = caplog.records
    assert "cannot send with <masked>" in caplog.text
    assert CHOSEN_TEXT not in caplog.text and CHOSEN_TEXT not in (record.exc_text or "")


# --- replay ------------------------------------------------------------------------------------------


@nh.natural_function
def copy_secret(conn: dict) -> str:
    """natural
    Put the password of <conn> in <:copied>.
    """
    return copied  # noqa: F821 - bound by the block


def test_the_replay_store_holds_no_name_only_secret(tmp_path: Path) -> None:
    store = tmp_path / "store.replay.yaml"
    script = Script([[evaluate("conn"), evaluate("conn['password']")], [finish()]])
    with nh.run(replay_executor(store, "record", model=FunctionModel(script))):
        use_password(CHOSEN_TEXT, {"password": KEYED_TEXT})
    text = store.read_text(encoding="utf-8")
    assert CHOSEN_TEXT not in text and KEYED_TEXT not in text and "<masked>" in text


def test_a_replayed_run_commits_the_same_values_as_the_recorded_run(tmp_path: Path) -> None:
    store = tmp_path / "store.replay.yaml"
    rounds = [[call("nh_assign", target_path="copied", expression="conn['password']")], [finish()]]
    with nh.run(replay_executor(store, "record", model=FunctionModel(Script(list(rounds))))):
        recorded = copy_secret({"password": CHOSEN_TEXT})
    with nh.run(replay_executor(store, "replay")):
        replayed = copy_secret({"password": CHOSEN_TEXT})
    assert recorded == replayed == CHOSEN_TEXT


@pytest.mark.parametrize("secret", [CHOSEN_TEXT, SHAPED_KEY], ids=["name-only", "credential-shaped"])
def test_replaying_an_answer_that_held_a_secret_value_fails_and_says_so(tmp_path: Path, secret: str) -> None:
    store = tmp_path / "store.replay.yaml"
    # The recording model wrote the value itself instead of naming the variable that holds it.
    rounds = [[call("nh_assign", target_path="copied", expression=repr(secret))], [finish()]]
    with nh.run(replay_executor(store, "record", model=FunctionModel(Script(rounds)))):
        assert copy_secret({"password": secret}) == secret
    assert secret not in store.read_text(encoding="utf-8")
    with nh.run(replay_executor(store, "replay")):
        with pytest.raises(ReplayMissError, match=r"calls `nh_assign` with '<masked>' in its arguments: .*wrote a secret value"):
            copy_secret({"password": secret})
