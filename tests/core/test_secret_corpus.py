"""A corpus of secrets against every way out of a step.

Thirty-five secrets sit in a user's scope the way real ones do: credential-shaped strings, credentials inside
connection strings, URLs and `Authorization` values under names that say nothing, and values that are
secret only because of their name, nested in dicts, lists, dataclasses, pydantic models and object
attributes, quoted by exception messages, interpolated into f-string blocks and kept in the environment. A
scripted model then pulls each one out by an expression that names it (`db_password`, `conn['password']`,
`str(conn)`, `repr(settings)`, `vars(client)`, `urlparse(url).password`, `unquote(url)`, `b64decode(...)`,
...), copies one into a variable, lets a return expression fail on one and echoes one in a `raise` message.

The corpus is named `CORPUS`, not `SECRETS`: a global under a credential name would make every value in it a
secret of every step of this module, and the scrubber would find them without looking where a step looks.

Every channel is captured from one recorded run: what the model received, the events, the OpenTelemetry
spans, the `nighthawk` log records, the saved display of each step, the replay file and the exceptions the
caller got. A leak is an occurrence of a secret, or of its JSON, `repr` or HTML-escaped form, in a channel.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import os
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any
import urllib.parse  # noqa: F401 - the scripted model calls it through the module's globals
from urllib.parse import quote, urlparse  # noqa: F401 - likewise

import pydantic
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai.models.function import FunctionModel

import nighthawk as nh
from nighthawk import events, telemetry
from nighthawk.replay import replay_executor
from nighthawk_ipython._display import StepView
from scripting import Script, call, finish

# --- the corpus -------------------------------------------------------------------------------------

CORPUS: dict[str, str] = {
    # credential-shaped, under names that say nothing
    "anthropic key in a nested dict": "sk-ant-api03-Qm9vYmFyQmF6UXV4MTIzNDU2Nzg5",
    "github token in an attribute's text": "ghp_" + "R2l0SHViVG9rZW5Gb3JUZXN0aW5nMDAx",
    "aws key id in a dataclass": "AKIA" + "QWERTYUIOPASDFGH",
    "jwt in a pydantic model": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJub3RlYm9vayJ9.c2lnbmF0dXJlLXRlc3Q",
    "slack token in a list": "xoxb-2048-4096-" + "SlackBotTokenValue",
    "google key in an exception message": "AIza" + "SyD-GoogleKeyForTests_0123456789abc",
    "openai key in an f-string block": "sk-proj-" + "FstringKeyA1b2C3d4E5f6G7h8",
    "pem key in a local": "-----BEGIN PRIVATE KEY-----\nMIIBVAIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
    "url password alone": "S3cret-Url-Pw",
    "bearer token in headers": "Zm9vYmFyYmF6cXV4MTIzNDU2",
    # credentials inside structured text, under names that say nothing
    "connection string Password": "Conn-Pa55-91x",
    "odbc PWD in braces": "br;ace-Pw-77",
    "url api_key parameter": "Qk7pZ2mX9vB4nR1s",
    "sas sig as sent": "Sas%2FSig%2BValue9%3D",
    "sas sig decoded": "Sas/Sig+Value9=",
    "fragment access_token": "Frag-Tok-123abcXY",
    "basic header as sent": base64.b64encode(b"svc:Basic-Pa55-42").decode(),
    "basic header password": "Basic-Pa55-42",
    "short bearer token": "Br3r-T0k9",
    "token scheme value": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    # secret only by name
    "db_password local": "hunter2-blue-42",
    "conn['password']": "Tr0ub4dor&3x",
    "dict key pw": "correct-horse-9",
    "dict key passcode": "7391-4482-x",
    "dataclass api_token": "tok-live-7f3a9c2e",
    "pydantic secret field": "quartz-lantern-88",
    "attribute client_secret": "cs-9a8b7c6d5e",
    "deep credentials dict": "m@il-Pa55word",
    "pydantic SecretStr": "vault-unseal-k3y",
    "private_key local": "0x4c0883a69102937d",
    "smtp_password in an exception": 'Sm7p-"relay"-pass',
    "passphrase in an f-string block": "orbit-velvet-canyon",
    "dsn with a password": "host=db user=app password=Dsn-Pa55-77",
    "environment SERVICE_TOKEN": "svc-env-0a1b2c3d",
    "admin_password echoed in raise_message": "adm1n-Echo-55",
}
S = CORPUS


@dataclass
class Cloud:
    region: str
    access_id: str


@dataclass
class Settings:
    endpoint: str
    api_token: str


class Profile(pydantic.BaseModel):
    name: str
    badge: str


class Account(pydantic.BaseModel):
    owner: str
    secret: str


class Vault(pydantic.BaseModel):
    unseal: pydantic.SecretStr


class Client:
    def __init__(self) -> None:
        self.base_url = "https://api.example.test"
        self.client_secret = S["attribute client_secret"]


class Repo:
    def __init__(self) -> None:
        self.note = "pushed with " + S["github token in an attribute's text"]


def geocode(place: str) -> str:
    raise PermissionError(f"key {S['google key in an exception message']} rejected for {place}")


def send_mail(smtp_password: str) -> None:
    raise ConnectionRefusedError(f"relay refused login with {smtp_password!r}")


# --- the scenario -----------------------------------------------------------------------------------


def evaluate(expression: str) -> Any:
    return call("nh_eval", expression=expression)


@nh.natural_function
def inspect_everything(
    config: dict, cloud: Cloud, profile: Profile, hooks: dict, pem_text: str, database_url: str, headers: dict,
    db_password: str, conn: dict, conn2: dict, door: dict, settings: Settings, account: Account, client: Client,
    repo: Repo, cfg: dict, vault: Vault, private_key: str, dsn: str, admin_password: str, endpoints: dict,
    upstream: dict,
) -> None:
    """natural
    Look at <config>, <cloud>, <profile>, <hooks>, <pem_text>, <database_url>, <headers>, <db_password>,
    <conn>, <conn2>, <door>, <settings>, <account>, <client>, <repo>, <cfg>, <vault>, <private_key>, <dsn>,
    <admin_password>, <endpoints> and <upstream>, then copy the password into <:copied>.
    """


@nh.natural_function
def mail_report(smtp_password: str) -> None:
    """natural
    Send the report with <smtp_password> and return the receipt.
    """


@nh.natural_function
def fstring_block(openai_key: str, passphrase: str) -> None:
    f"""natural
    Call the API with key {openai_key} and unlock with passphrase {passphrase}.
    """


INSPECTIONS = [
    "config['llm']",
    "cloud",
    "profile",
    "hooks",
    "pem_text",
    "urlparse(database_url).password",
    "headers",
    "db_password",
    "conn['password']",
    "str(conn)",
    "conn2",
    "door['passcode']",
    "settings.api_token",
    "repr(settings)",
    "str(account)",
    "vars(client)",
    "repo.note",
    "json.dumps(cfg)",
    "vault.unseal.get_secret_value()",
    "private_key",
    "dsn",
    "os.environ['SERVICE_TOKEN']",
    "geocode('Oslo')",
    "endpoints",
    "str(endpoints)",
    "urllib.parse.unquote(endpoints['blob'])",
    "endpoints['warehouse'].split(';')",
    "upstream",
    "base64.b64decode(upstream['X-Upstream'].split()[1]).decode()",
]


def _script() -> Script:
    return Script(
        [
            # inspect_everything
            [evaluate(expression) for expression in INSPECTIONS],
            [call("nh_assign", target_path="copied", expression="conn['password']")],
            [finish("raise", raise_message=f"login refused for password {S['admin_password echoed in raise_message']}")],
            # mail_report: the return expression fails on every try
            [finish("return", return_expression="send_mail(smtp_password)")],
            [finish("return", return_expression="send_mail(smtp_password)")],
            [finish("return", return_expression="send_mail(smtp_password)")],
            # fstring_block
            [finish("pass")],
        ]
    )


def _failing_listener(event: events.Event) -> None:
    # A user's exporter that chokes on a tool result and says what it choked on: nighthawk logs the failure.
    if isinstance(event, events.ToolCallFinished) and event.result:
        raise RuntimeError(f"exporter rejected {event.result}")


@dataclass
class Channels:
    model: list[str]
    events: list[str]
    spans: list[str]
    logs: list[str]
    display: list[str]
    replay_file: list[str]
    exceptions: list[str]


def _strings(value: object, depth: int = 0) -> Iterator[str]:
    """Every string inside `value` (dataclasses, pydantic models, mappings, sequences), keys included."""
    if depth > 40:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, bytes):
        yield value.decode("utf-8", "replace")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, depth + 1)
            yield from _strings(item, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item, depth + 1)
    elif isinstance(value, pydantic.BaseModel):
        yield from _strings(value.model_dump(), depth + 1)
    elif is_dataclass(value) and not isinstance(value, type):
        for item in fields(value):
            yield from _strings(getattr(value, item.name, None), depth + 1)


def _spans(exporter: InMemorySpanExporter) -> list[str]:
    texts: list[str] = []
    for span in exporter.get_finished_spans():
        texts.append(span.name)
        texts += _strings(dict(span.attributes or {}))
        texts.append(span.status.description or "")
        for event in span.events:
            texts.append(event.name)
            texts += _strings(dict(event.attributes or {}))
    return texts


def _displays(captured: list[events.Event]) -> list[str]:
    views: dict[str, StepView] = {}
    for event in captured:
        if isinstance(event, events.StepStarted):
            views[event.invocation_id] = StepView(event, mode="html")
        elif (view := views.get(getattr(event, "invocation_id", ""))) is not None:
            view.apply(event)
    texts: list[str] = []
    for view in views.values():
        texts += [str(value) for value in view._repr_mimebundle_().values()]
    return texts


@pytest.fixture(scope="module")
def channels(tmp_path_factory: pytest.TempPathFactory) -> Channels:
    store = tmp_path_factory.mktemp("corpus") / "corpus.replay.yaml"
    script = _script()
    captured: list[events.Event] = []
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.DEBUG)
    logger = logging.getLogger("nighthawk")
    raised: list[BaseException] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NIGHTHAWK_TOKENIZER", "estimate")
        patch.setenv("SERVICE_TOKEN", S["environment SERVICE_TOKEN"])
        patch.setattr(logger, "level", logging.DEBUG)
        logger.addHandler(handler)
        try:
            with (
                events.listen(captured.append),
                events.listen(telemetry.OpenTelemetryListener(tracer_provider=provider)),
                events.listen(_failing_listener),
                nh.run(replay_executor(store, "record", model=FunctionModel(script))),
            ):
                for block, arguments in _calls():
                    try:
                        block(**arguments)
                    except Exception as exc:  # each block ends in an exception the caller sees
                        raised.append(exc)
        finally:
            logger.removeHandler(handler)
            provider.shutdown()
    formatter = logging.Formatter("%(levelname)s %(name)s %(message)s")
    model_texts = [text for messages in script.seen for text in _strings(messages)]
    model_texts += [info.instructions or "" for info in script.infos]
    return Channels(
        model=model_texts,
        events=[text for event in captured for text in _strings(event)],
        spans=_spans(exporter),
        logs=[formatter.format(record) for record in records],
        display=_displays(captured),
        replay_file=[store.read_text(encoding="utf-8")],
        exceptions=["".join(traceback.format_exception(exc)) for exc in raised],
    )


def _calls() -> list[tuple[Any, dict[str, object]]]:
    return [
        (
            inspect_everything,
            {
                "config": {"llm": {"provider": "anthropic", "anthropic": S["anthropic key in a nested dict"]}},
                "cloud": Cloud(region="eu-north-1", access_id=S["aws key id in a dataclass"]),
                "profile": Profile(name="analyst", badge=S["jwt in a pydantic model"]),
                "hooks": {"slack": [S["slack token in a list"]]},
                "pem_text": S["pem key in a local"],
                "database_url": f"postgresql://app:{S['url password alone']}@db.internal/app",
                "headers": {"Accept": "application/json", "X-Forward": "Bearer " + S["bearer token in headers"]},
                "db_password": S["db_password local"],
                "conn": {"host": "db", "user": "app", "password": S["conn['password']"]},
                "conn2": {"host": "cache", "pw": S["dict key pw"]},
                "door": {"room": "lab", "passcode": S["dict key passcode"]},
                "settings": Settings(endpoint="https://svc.test", api_token=S["dataclass api_token"]),
                "account": Account(owner="ops", secret=S["pydantic secret field"]),
                "client": Client(),
                "repo": Repo(),
                "cfg": {"services": [{"name": "mail", "credentials": {"user": "mailer", "password": S["deep credentials dict"]}}]},
                "vault": Vault(unseal=pydantic.SecretStr(S["pydantic SecretStr"])),
                "private_key": S["private_key local"],
                "dsn": S["dsn with a password"],
                "admin_password": S["admin_password echoed in raise_message"],
                "endpoints": {
                    "warehouse": f"Server=dw;User Id=etl;Password={S['connection string Password']};",
                    "legacy": f"Driver={{SQL Server}};Server=old;UID=etl;PWD={{{S['odbc PWD in braces']}}};",
                    "items": f"https://api.example.test/items?api_key={S['url api_key parameter']}&page=1",
                    "blob": f"https://blob.example.test/c/data.csv?sv=2022-11-02&sig={S['sas sig as sent']}",
                    "callback": f"https://app.example.test/cb#access_token={S['fragment access_token']}&token_type=bearer",
                },
                "upstream": {
                    "X-Upstream": "Basic " + S["basic header as sent"],
                    "X-Relay": "Bearer " + S["short bearer token"],
                    "X-Api": "Token " + S["token scheme value"],
                },
            },
        ),
        (mail_report, {"smtp_password": S["smtp_password in an exception"]}),
        (
            fstring_block,
            {"openai_key": S["openai key in an f-string block"], "passphrase": S["passphrase in an f-string block"]},
        ),
    ]


# --- the checks -------------------------------------------------------------------------------------

CHANNELS = ("model", "events", "spans", "logs", "display", "replay_file", "exceptions")


def _forms(secret: str) -> set[str]:
    """The texts that would disclose `secret`: itself and its escaped forms."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1]}
    return forms | {html.escape(form) for form in forms}


def _leaks(texts: list[str], secret: str) -> int:
    forms = _forms(secret)
    return sum(1 for text in texts if any(form in text for form in forms))


def test_the_corpus_has_at_least_twenty_distinct_secrets() -> None:
    assert len(set(CORPUS.values())) == len(CORPUS) >= 20


def test_the_scenario_reaches_every_channel(channels: Channels) -> None:
    # Guards the corpus itself: a channel that captured nothing would pass every leak check vacuously.
    for channel in CHANNELS:
        assert any(text.strip() for text in getattr(channels, channel)), channel
    assert len(channels.exceptions) == 2  # the `raise` outcome and the failing return expression


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("name", list(CORPUS))
def test_no_secret_leaks_through_any_channel(channels: Channels, channel: str, name: str) -> None:
    assert _leaks(getattr(channels, channel), CORPUS[name]) == 0


def test_leak_count_is_zero_on_every_channel(channels: Channels, capsys: pytest.CaptureFixture[str]) -> None:
    counts = {channel: sum(_leaks(getattr(channels, channel), secret) for secret in CORPUS.values()) for channel in CHANNELS}
    with capsys.disabled():
        print("\nsecret leaks per channel:", ", ".join(f"{channel}={count}" for channel, count in counts.items()))
    assert counts == dict.fromkeys(CHANNELS, 0)
