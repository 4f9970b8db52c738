"""Credentials kept under a credential key of configuration text are masked whatever the variable is called.

A notebook reads `.env` files, YAML and JSON configs and shell snippets as plain strings, under neutral names
(`config_text`, `env_text`). The value under a credential key (`password`, `api_key`, `OPENAI_API_KEY`, curl's
`-u user:password`) is masked; the keys and the rest of the text stay. A scripted model reads the text back,
copies it into a `raise` message, and everything it was sent, every event, the replay file and the exception
the caller gets are searched for the value.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh
from nighthawk import events
from nighthawk.replay import replay_executor
from scripting import Script, call, finish, scripted_executor

# Neutral names on purpose: a global named like a credential would make its value a secret of every step of
# this module, whatever text holds it.
CHOSEN_TEXT = "Xq7-pR2v-Lm9k"  # a password a person chose
GENERATED_TEXT = "Xq7pR2vLm9kT"  # a generated key, too short for a random token

CONFIG_TEXTS = {
    "json": f'{{"user": "app", "password": "{CHOSEN_TEXT}"}}',
    "json-api-key": f'{{"api_key": "{GENERATED_TEXT}"}}',
    "python-dict": f"{{'user': 'app', 'token': '{GENERATED_TEXT}'}}",
    "yaml": f"password: {CHOSEN_TEXT}",
    "yaml-nested": f'database:\n  host: db\n  password: "{CHOSEN_TEXT}"\n  port: 5432',
    "dotenv": f"OPENAI_API_KEY={GENERATED_TEXT}",
    "shell-export": f"export GITHUB_TOKEN={GENERATED_TEXT}",
    "django": f"SECRET_KEY={GENERATED_TEXT}",
    "ini": f"[x]\napi_key = {GENERATED_TEXT}\nhost = db",
    "toml": f'[service]\napi_key = "{GENERATED_TEXT}"  # rotate monthly',
    "curl-u": f"curl -u app:{GENERATED_TEXT} https://api.example.test/v1",
    "curl-user": f"curl --user app:{CHOSEN_TEXT} https://api.example.test/v1",
}


def _secret_of(text: str) -> str:
    return CHOSEN_TEXT if CHOSEN_TEXT in text else GENERATED_TEXT


@nh.natural_function
def configure(config_text: str) -> None:
    """natural
    Configure the service from <config_text>.
    """


def _sent(script: Script) -> str:
    """Everything the model was sent, as text."""
    return "\n".join(str(part) for messages in script.seen for message in messages for part in message.parts)


@pytest.mark.parametrize("text", list(CONFIG_TEXTS.values()), ids=list(CONFIG_TEXTS))
def test_a_credential_under_a_credential_key_of_configuration_text_leaks_nowhere(tmp_path: Path, text: str) -> None:
    secret = _secret_of(text)
    store = tmp_path / "store.replay.yaml"
    # The model reads the text back, then writes it into the message of the exception it asks for.
    script = Script(
        [
            [call("nh_eval", expression="config_text"), call("nh_eval", expression="config_text.splitlines()")],
            [finish("raise", raise_message=f"bad configuration: {text}")],
        ]
    )
    seen: list[events.Event] = []
    with events.listen(seen.append), nh.run(replay_executor(store, "record", model=FunctionModel(script))):
        with pytest.raises(nh.ExecutionError) as caught:
            configure(text)
    assert "<masked>" in _sent(script)
    leaks = {
        "request": secret in _sent(script),
        "events": any(secret in repr(event) for event in seen),
        "replay file": secret in store.read_text(encoding="utf-8"),
        "exception": secret in str(caught.value) or secret in str(caught.value.__cause__),
    }
    assert not any(leaks.values()), leaks


def test_only_the_value_of_a_credential_key_is_masked_in_the_prompt() -> None:
    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        configure(CONFIG_TEXTS["yaml-nested"])
    prompt = str(script.seen[0][0].parts[-1].content)
    assert r'config_text: str = "database:\n  host: db\n  password: \"<masked>\"\n  port: 5432"' in prompt


def test_a_dotenv_file_read_with_open_is_masked_in_the_tool_result(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(f"DB_HOST=db\nOPENAI_API_KEY={GENERATED_TEXT}\nDEBUG=1\n", encoding="utf-8")

    @nh.natural_function
    def load(env_path: str) -> None:
        """natural
        Load the settings in the file at <env_path>.
        """

    executor, script = scripted_executor([call("nh_eval", expression="open(env_path).read()")], [finish()])
    with nh.run(executor):
        load(os.fspath(env_file))
    (result,) = script.last_tool_results()
    assert json.loads(result)["value"] == "DB_HOST=db\nOPENAI_API_KEY=<masked>\nDEBUG=1\n"


INNOCENT_TEXTS = [
    "name: Alice\nrole: admin\nregion: eu-west-1",
    '{"token": "bearer", "auth": "basic", "api_key": null, "salt": 16}',
    "token: bearer\nsort_key: created_at-desc",
    "run_id: 550e8400-e29b-41d4-a716-446655440000",
    "commit: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "homepage: https://example.test/docs?page=2",
    "PWD=/home/analyst/project\nHOME=/home/analyst",
    "password: ${DB_PASSWORD}\ntoken_budget: 4000",
    "docker run -u 1000:1000 image",
    'client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])\n'
    "rows = connect(token=get_token(), secret=settings.api_secret)",
]


@pytest.mark.parametrize("text", INNOCENT_TEXTS)
def test_configuration_text_without_a_credential_value_reaches_the_model_unmasked(text: str) -> None:
    executor, script = scripted_executor([call("nh_eval", expression="config_text")], [finish()])
    with nh.run(executor):
        configure(text)
    (result,) = script.last_tool_results()
    assert json.loads(result)["value"] == text


def _png_data_uri() -> str:
    # A PNG's signature and header, then bytes as random as compressed pixels.
    header = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000040000000400806000000aa6971de")
    pixels = bytes((i * 73 + (i * i) % 251) % 256 for i in range(600))
    return "data:image/png;base64," + base64.b64encode(header + pixels).decode()


def test_an_image_data_uri_is_not_masked() -> None:
    @nh.natural_function
    def describe(image_uri: str) -> None:
        """natural
        Describe the picture at <image_uri>.
        """

    uri = _png_data_uri()
    executor, script = scripted_executor([call("nh_eval", expression="image_uri[:200]")], [finish()])
    with nh.run(executor):
        describe(uri)
    prompt = str(script.seen[0][0].parts[-1].content)
    (result,) = script.last_tool_results()
    assert "data:image/png;base64,iVBORw0KGgo" in prompt and "<masked>" not in prompt
    assert json.loads(result)["value"] == uri[:200]


def test_a_value_quoted_in_prose_ends_at_its_closing_backtick() -> None:
    from nighthawk.secrets import ContextRedaction

    text = "Run `export GITHUB_TOKEN=ghx_Xq7pR2vLm9kTzz` first, then `make deploy` (see `docs/deploy.md`)."
    assert ContextRedaction().scrub_text(text) == "Run `export GITHUB_TOKEN=<masked>` first, then `make deploy` (see `docs/deploy.md`)."
