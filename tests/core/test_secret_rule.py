"""What counts as a secret, seen from a notebook user's side.

A value is masked in everything sent when it has a credential shape, or sits under a credential name and is
not ordinary text. Masking touches user data only: the protocol (instructions, tool schemas, the outcome
schema, the replay store's structure) is sent and stored as written, whatever is in scope.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic_ai.models.function import AgentInfo, FunctionModel

import nighthawk as nh
from nighthawk.replay import replay_executor
from scripting import Script, call, finish, offered_kinds, scripted_executor

# Neutral names on purpose: a global named like a credential (`PASSWORD`) is a secret of every step of this
# module, so it would be masked whatever route each test checks, and a regression of that route would pass.
CHOSEN_TEXT = "hunter2-blue-42"  # a password a person chose


def evaluate(expression: str):
    return call("nh_eval", expression=expression)


def _protocol(info: AgentInfo) -> str:
    """The protocol half of a request: instructions and every tool's name and JSON schema."""
    tools = [[tool.name, tool.description, tool.parameters_json_schema] for tool in (*info.function_tools, *info.output_tools)]
    return (info.instructions or "") + json.dumps(tools)


def _protocol_with(**scope: object) -> tuple[str, AgentInfo]:
    @nh.natural_function
    def look(value: object) -> object:
        """natural
        Look at <value> and return it.
        """

    executor, script = scripted_executor([finish("return", return_expression="value")])
    with nh.run(executor):
        look(dict(scope))
    (info,) = script.infos
    return _protocol(info), info


# --- the protocol is never rewritten ------------------------------------------------------------------


def test_tool_schemas_keep_their_string_types_with_sort_key_string_in_scope() -> None:
    @nh.natural_function
    def sort_rows(rows: list, sort_key: str) -> None:
        """natural
        Sort <rows> by the column <sort_key> names.
        """

    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        sort_rows([{"string": 1}], sort_key="string")
    (info,) = script.infos
    (eval_tool,) = [tool for tool in info.function_tools if tool.name == "nh_eval"]
    assert eval_tool.parameters_json_schema["properties"]["expression"]["type"] == "string"
    assert "<masked>" not in _protocol(info)


def test_the_system_prompt_is_sent_as_written_with_sort_key_string_in_scope() -> None:
    plain, _ = _protocol_with(column="created_at")
    with_sort_key, _ = _protocol_with(sort_key="string")
    assert with_sort_key == plain


def test_an_expression_value_under_primary_key_leaves_the_eval_schema_alone() -> None:
    _, info = _protocol_with(primary_key="expression")
    (eval_tool,) = [tool for tool in info.function_tools if tool.name == "nh_eval"]
    assert eval_tool.parameters_json_schema["required"] == ["expression"]
    assert "expression" in eval_tool.parameters_json_schema["properties"]


def test_a_return_value_under_key_column_keeps_return_among_the_outcome_kinds() -> None:
    _, info = _protocol_with(key_column="return")
    assert "return" in offered_kinds(info)
    assert "<masked>" not in (info.instructions or "")


def test_an_ordinary_word_under_a_credential_name_does_not_rewrite_the_protocol() -> None:
    plain, _ = _protocol_with(column="created_at")
    assert _protocol_with(api_token="return")[0] == plain
    assert _protocol_with(password="string")[0] == plain


# --- the name rule, as the user sees it ----------------------------------------------------------------


@nh.natural_function
def inspect_scope(scope: dict) -> None:
    """natural
    Inspect <scope>.
    """


@pytest.mark.parametrize("name", ["sort_key", "primary_key", "key_column"])
def test_a_value_under_a_name_that_only_contains_key_reaches_the_model(name: str) -> None:
    executor, script = scripted_executor([evaluate(f"scope[{name!r}]")], [finish()])
    with nh.run(executor):
        inspect_scope({name: "created_at-desc"})
    assert script.last_tool_results() == ['{"value": "created_at-desc", "error": null}']


@pytest.mark.parametrize(
    "name",
    ["api_key", "access_key", "password", "token", "client_secret", "authToken", "DB-PASSWORD", "github_token", "session_id"],
)
def test_a_value_under_a_credential_name_is_masked_in_a_tool_result(name: str) -> None:
    executor, script = scripted_executor([evaluate("str(scope)")], [finish()])
    with nh.run(executor):
        inspect_scope({name: CHOSEN_TEXT})
    (result,) = script.last_tool_results()
    assert CHOSEN_TEXT not in result and "<masked>" in result


@pytest.mark.parametrize("value", ["string", "nighthawk", "created_at", "12345678"])
def test_ordinary_text_under_a_credential_name_is_not_masked_outside_its_name(value: str) -> None:
    executor, script = scripted_executor([evaluate("f'echo {str(scope)}'")], [finish()])
    with nh.run(executor):
        inspect_scope({"password": value})
    (result,) = script.last_tool_results()
    assert f"'password': '{value}'" in result


@pytest.mark.parametrize(
    ("value", "other"),
    [
        ("https://oauth2.example.com/token", "https://oauth2.example.com/tokeninfo"),
        ("/home/ada/.config/gh/hosts.yml", "/home/ada/.config/gh/"),
        ("~/.cache/huggingface/token", "~/.cache/huggingface/hub"),
        ("2026-11-25T08:30:00Z", "released 2026-11-25T08:30:00Z"),
    ],
    ids=["url", "path", "home-path", "iso-time"],
)
def test_a_url_path_or_date_under_a_credential_name_does_not_mask_other_text(value: str, other: str) -> None:
    executor, script = scripted_executor([evaluate("scope['other']")], [finish()])
    with nh.run(executor):
        inspect_scope({"auth_token": value, "other": other})
    assert script.last_tool_results() == [json.dumps({"value": other, "error": None})]


@pytest.mark.parametrize("name", ["token_url", "password_file", "HF_TOKEN_PATH", "SSH_AUTH_SOCK", "PASSWORD_STORE_DIR", "AUTH_MODE"])
def test_a_name_ending_in_a_descriptor_is_not_a_credential_name(name: str) -> None:
    executor, script = scripted_executor([evaluate("scope")], [finish()])
    with nh.run(executor):
        inspect_scope({name: "oauth2-pkce-v3"})
    (result,) = script.last_tool_results()
    assert f'"{name}":"oauth2-pkce-v3"' in result.replace(" ", "")


def test_a_long_random_token_is_masked_under_any_name() -> None:
    token = "Qx7vR2mZ9pL4tK8wN3bY6cJ1hF5dS0aG"
    executor, script = scripted_executor([evaluate("'id=' + scope['build']")], [finish()])
    with nh.run(executor):
        inspect_scope({"build": token})
    (result,) = script.last_tool_results()
    assert token not in result and '"id=<masked>"' in result


def test_a_hex_digest_and_a_uuid_are_not_taken_for_random_tokens() -> None:
    digest, uuid = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "550e8400-e29b-41d4-a716-446655440000"
    executor, script = scripted_executor([evaluate("scope")], [finish()])
    with nh.run(executor):
        inspect_scope({"sha": digest, "id": uuid})
    (result,) = script.last_tool_results()
    assert digest in result and uuid in result


# --- where candidates come from ---------------------------------------------------------------------


def test_a_credential_named_environment_variable_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BILLING_API_TOKEN", "env-tok-93b1c-live")
    executor, script = scripted_executor([evaluate("__import__('os').environ['BILLING_API_TOKEN']")], [finish()])
    with nh.run(executor):
        inspect_scope({})
    (result,) = script.last_tool_results()
    assert "env-tok-93b1c-live" not in result and "<masked>" in result


def test_a_credential_put_in_the_environment_between_two_steps_is_masked_in_the_second(monkeypatch: pytest.MonkeyPatch) -> None:
    read = evaluate("__import__('os').environ.get('BILLING_API_TOKEN', 'unset')")
    executor, script = scripted_executor([read], [finish()], [read], [finish()], [read], [finish()])
    results = []
    with nh.run(executor):
        inspect_scope({})  # the environment as it was is judged (and remembered)
        results += script.last_tool_results()
        monkeypatch.setenv("BILLING_API_TOKEN", "env-tok-77a0e-live")
        inspect_scope({})
        results += script.last_tool_results()
        monkeypatch.setenv("BILLING_API_TOKEN", "env-tok-5d2f1-rotated")
        inspect_scope({})
        results += script.last_tool_results()
    before, set_later, changed = results
    assert "unset" in before
    assert "env-tok-77a0e-live" not in set_later and "<masked>" in set_later
    assert "env-tok-5d2f1-rotated" not in changed and "<masked>" in changed


def test_steps_derive_the_masked_forms_of_an_unchanged_environment_secret_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every item of a map is a step: deriving each environment secret's escapes, cases and pieces again per
    # item was client CPU per request. While the environment stays as it is, the forms are derived once.
    from nighthawk.secrets import _scrubber

    token = "env-tok-4c9e2-live"
    derived_from: list[str] = []
    real = _scrubber._masked_texts

    def counted(value: str):
        derived_from.append(value)
        return real(value)

    monkeypatch.setattr(_scrubber, "_masked_texts", counted)
    monkeypatch.setenv("BILLING_API_TOKEN", token)
    read = evaluate("__import__('os').environ['BILLING_API_TOKEN']")
    executor, script = scripted_executor(*[step for _ in range(4) for step in ([read], [finish()])])
    with nh.run(executor):
        for _ in range(4):
            inspect_scope({})
            (result,) = script.last_tool_results()
            assert token not in result and "<masked>" in result
    assert derived_from.count(token) == 1


def test_a_steps_prompt_is_searched_for_secrets_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The prompt is scrubbed as it is rendered and again by the model wrapper on its way out: the second
    # pass finds the same text, still clean for the same secrets, and need not search it again.
    from nighthawk.secrets._scrubber import SecretScrubber

    searched: list[str] = []
    real = SecretScrubber.scrub_values

    def counted(self: SecretScrubber, text: str) -> str:
        searched.append(text)
        return real(self, text)

    monkeypatch.setattr(SecretScrubber, "scrub_values", counted)
    executor, _script = scripted_executor([finish()])
    with nh.run(executor):
        inspect_scope({"ticket": "printer on floor 3 jams on every duplex job"})
    assert len([text for text in searched if "duplex job" in text]) == 1


def test_a_directory_in_a_credential_looking_environment_variable_is_not_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PASSWORD_STORE_DIR", "/srv/team-store")
    executor, script = scripted_executor([evaluate("'/srv/team-store/web'")], [finish()])
    with nh.run(executor):
        inspect_scope({})
    assert script.last_tool_results() == ['{"value": "/srv/team-store/web", "error": null}']


def test_an_environment_variable_under_a_name_that_only_contains_key_is_not_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPORT_SORT_KEY", "created_at-desc")
    executor, script = scripted_executor([evaluate("__import__('os').environ['REPORT_SORT_KEY']")], [finish()])
    with nh.run(executor):
        inspect_scope({})
    assert script.last_tool_results() == ['{"value": "created_at-desc", "error": null}']


@nh.natural_function
def use_password(password: str) -> None:
    """natural
    Use <password>.
    """


@pytest.mark.parametrize(
    ("expression", "derived"),
    [
        ("password.upper()", CHOSEN_TEXT.upper()),
        ("password.lower().swapcase()", CHOSEN_TEXT.upper()),
        ("password[::-1]", CHOSEN_TEXT[::-1]),
        ("base64.b64encode(password.encode()).decode()", base64.b64encode(CHOSEN_TEXT.encode()).decode()),
        ("password[:7]", CHOSEN_TEXT[:7]),
        ("password[7:]", CHOSEN_TEXT[7:]),
    ],
    ids=["upper", "swapcase", "reversed", "base64", "first-half", "second-half"],
)
def test_a_derived_form_of_a_password_is_masked_in_the_tool_result(expression: str, derived: str) -> None:
    executor, script = scripted_executor([evaluate(expression)], [finish()])
    with nh.run(executor):
        use_password(CHOSEN_TEXT)
    (result,) = script.last_tool_results()
    assert derived not in result and "<masked>" in result


@dataclass
class Settings:
    endpoint: str
    api_token: str


class Client:
    def __init__(self) -> None:
        self.base_url = "https://api.example.test"
        self.client_secret = "cs-9a8b7c6d5e"


@nh.natural_function
def use_client(client: Client, settings: Settings) -> None:
    """natural
    Call the service with <client> and <settings>.
    """


@pytest.mark.parametrize("expression", ["client.client_secret", "vars(client)['client_secret']", "settings.api_token + '!'"])
def test_an_attribute_named_as_a_credential_is_masked_when_an_expression_reads_it(expression: str) -> None:
    executor, script = scripted_executor([evaluate(expression)], [finish()])
    with nh.run(executor):
        use_client(Client(), Settings(endpoint="https://svc.test", api_token="tok-live-7f3a9c2e"))
    (result,) = script.last_tool_results()
    assert "cs-9a8b7c6d5e" not in result and "tok-live-7f3a9c2e" not in result and "<masked>" in result


# --- the replay store -------------------------------------------------------------------------------


@nh.natural_function
def pick(rows: list, sort_key: str) -> str:
    """natural
    Return the first of <rows> ordered by <sort_key>.
    """


def test_the_replay_store_keeps_kind_unmasked_with_return_under_sort_key(tmp_path: Path) -> None:
    store = tmp_path / "store.replay.yaml"
    rounds = [[finish("return", return_expression="rows[0]")]]
    with nh.run(replay_executor(store, "record", model=FunctionModel(Script(rounds)))):
        assert pick(["a", "b"], sort_key="return") == "a"
    text = store.read_text(encoding="utf-8")
    assert "<masked>" not in text and "kind: return" in text


def test_a_store_recorded_with_return_under_sort_key_replays(tmp_path: Path) -> None:
    store = tmp_path / "store.replay.yaml"
    rounds = [[finish("return", return_expression="rows[0]")]]
    with nh.run(replay_executor(store, "record", model=FunctionModel(Script(rounds)))):
        pick(["a", "b"], sort_key="return")
    with nh.run(replay_executor(store, "replay")):
        assert pick(["a", "b"], sort_key="return") == "a"


# Module data no block of this file reads, under a name that is not a credential name: a step checks the
# names of its globals, never what the others hold (a credential-named global is masked: see
# test_secret_globals.py).
UNRELATED_SETTINGS = {"shell": {"pwd": "reports-2024-q3"}}


def test_text_that_module_data_the_block_never_reads_holds_under_a_credential_name_is_not_masked() -> None:
    executor, script = scripted_executor([evaluate("scope['folder']")], [finish()])
    with nh.run(executor):
        inspect_scope({"folder": "reports-2024-q3"})
    assert script.last_tool_results() == ['{"value": "reports-2024-q3", "error": null}']
