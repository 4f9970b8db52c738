"""Credentials inside structured text are masked whatever the variable is called.

A connection string's password, a credential parameter of a URL and an `Authorization` value are secrets by
their place in the text, not by the name of the variable that holds them (`conn_str`, `url`, `headers`).
Each is written the many ways an attacker, or a careless config file, writes it (case, spacing, quoting,
percent-encoding, a fragment instead of a query), held by an innocent name, and pulled out by a scripted
model: in the prompt, through `nh_eval` of the value and of what a program derives from it in one call
(`unquote`, `b64decode`, `split`). Nothing the model receives may hold the secret.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Any
from urllib.parse import quote

import pytest

import nighthawk as nh
from scripting import Script, call, finish, scripted_executor

# Neutral names on purpose: a global named like a credential (`SECRET`) would make its value a secret of
# every step of this module, whatever the text holding it looks like.
CHOSEN_TEXT = "Xq7-pR2v-Lm9w"  # a password a person chose
GENERATED_TEXT = "Tk4bZ9qX1mN7wR2s"  # a generated token, 16 characters
ENCODED_USER = base64.b64encode(f"app:{CHOSEN_TEXT}".encode()).decode()

CONNECTION_STRINGS = [
    f"Server=db.internal;Database=sales;User Id=app;Password={CHOSEN_TEXT};",
    f"Server=db.internal;User Id=app;PASSWORD={CHOSEN_TEXT}",
    f"Driver={{ODBC Driver 18}};Server=db;UID=app;PWD={CHOSEN_TEXT};Encrypt=yes",
    f"server=db;uid=app;pWd = {CHOSEN_TEXT} ;database=x",
    f"Server=db;Password=\"{CHOSEN_TEXT};x\";Database=x",
    f"Server=db;Password='{CHOSEN_TEXT}';Database=x",
    f"Driver={{x}};PWD={{{CHOSEN_TEXT}}};",
    f"Data Source=db\nPassword={CHOSEN_TEXT}\nInitial Catalog=x",
    f"host=db port=5432 user=app password={CHOSEN_TEXT} dbname=x",
    f"spring.datasource.password={CHOSEN_TEXT}",
    f"--password={CHOSEN_TEXT}",
    f"PGPASSWORD={CHOSEN_TEXT} psql -h db",
    f"export DB_PASSWORD='{CHOSEN_TEXT}'",
]

URLS = [
    f"https://api.example.test/v1/items?api_key={GENERATED_TEXT}&page=2",
    f"https://api.example.test/v1/items?page=2&APIKEY={GENERATED_TEXT}",
    f"https://maps.example.test/geocode?address=Oslo&key={GENERATED_TEXT}",
    f"https://api.example.test/x?Token={GENERATED_TEXT}",
    f"https://auth.example.test/cb#access_token={GENERATED_TEXT}&token_type=bearer",
    f"https://store.example.test/c/b.csv?sv=2022-11-02&sr=b&sig={quote(GENERATED_TEXT + '/+=', safe='')}",
    f"https://bucket.example.test/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={GENERATED_TEXT}",
    f"https://api.example.test/x?signature={GENERATED_TEXT}",
    f"https://api.example.test/login?user=app&password={CHOSEN_TEXT}",
    f"https://api.example.test/x?client_secret={CHOSEN_TEXT}",
    f"https://api.example.test/x?api%5Fkey={GENERATED_TEXT}",
    f"https://api.example.test/x?%61ccess%5Ftoken={GENERATED_TEXT}",
    f"https://api.example.test/x?secret={quote(CHOSEN_TEXT)}",
    f"https://api.example.test/x?db_password={CHOSEN_TEXT}&page=2",
    f'<a href="https://api.example.test/x?page=2&amp;token={GENERATED_TEXT}">next</a>',
]

HEADER_VALUES = [
    f"Basic {ENCODED_USER}",
    f"basic {ENCODED_USER}",
    f"BASIC\t{ENCODED_USER}",
    f"Basic  {base64.urlsafe_b64encode(f'app:{CHOSEN_TEXT}'.encode()).decode().rstrip('=')}",
    f"Authorization: Basic%20{ENCODED_USER}",
    f"Bearer {GENERATED_TEXT}",
    f"bearer   {GENERATED_TEXT}",
    f"Bearer {GENERATED_TEXT[:9]}",  # a short test token: 9 characters, not a word
    f"Token {GENERATED_TEXT}0a1b2c",
    f"token {GENERATED_TEXT}",
]

CASES = [*CONNECTION_STRINGS, *URLS, *HEADER_VALUES]


def _credential_of(text: str) -> str:
    """The credential `text` holds."""
    if CHOSEN_TEXT in text or quote(CHOSEN_TEXT) in text or "asic" in text.lower():
        return CHOSEN_TEXT
    return GENERATED_TEXT if GENERATED_TEXT in text or quote(GENERATED_TEXT) in text else GENERATED_TEXT[:9]


@nh.natural_function
def use_setting(setting: str, settings: dict) -> None:
    """natural
    Use <setting> and <settings>.
    """


def _forms(secret: str) -> set[str]:
    """What discloses `secret`: itself, its escapes, its URL and base64 encodings, its case changes, reversed."""
    forms = {secret, json.dumps(secret)[1:-1], repr(secret)[1:-1], quote(secret, safe="")}
    forms |= {secret.upper(), secret.lower(), secret[::-1]}
    if secret == CHOSEN_TEXT:
        forms.add(base64.b64encode(f"app:{secret}".encode()).decode())
    return forms


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _strings(item)]
    if value is None or isinstance(value, (int, float)):
        return []
    return [text for name in ("content", "args") for text in _strings(getattr(value, name, None))]


def _model_saw(script: Script) -> list[str]:
    return [text for messages in script.seen for message in messages for part in message.parts for text in _strings(part)]


# Each reads the value, or derives from it in one call what a program would (`base64` and `urllib` are globals
# of this module, so the block's expressions see them).
EXPRESSIONS = [
    "setting",
    "settings",
    "str(settings)",
    "urllib.parse.unquote(setting)",
    "setting.split('=')",
    "setting.split()",
    "setting.upper()",
    "setting.lower()",
    "setting[::-1]",
    "json.dumps({'value': setting})",
    "[base64.b64decode(part + '==').decode('utf-8', 'replace') for part in setting.replace('%20', ' ').split()[1:2]]",
    "[base64.urlsafe_b64decode(part + '==').decode('utf-8', 'replace') for part in setting.split()[1:2]]",
]


def _run(text: str) -> Script:
    rounds = [[call("nh_eval", expression=expression) for expression in EXPRESSIONS], [finish()]]
    executor, script = scripted_executor(*rounds)
    with nh.run(executor):
        use_setting(text, {"upstream": text, "items": [text]})
    return script


@pytest.mark.parametrize("text", CASES)
def test_a_credential_in_structured_text_never_reaches_the_model(text: str) -> None:
    script = _run(text)
    seen = _model_saw(script)
    forms = _forms(_credential_of(text))
    leaks = [piece for piece in seen for form in forms if form in piece]
    assert not leaks, leaks


def test_the_rest_of_a_connection_string_stays_visible() -> None:
    script = _run(CONNECTION_STRINGS[0])
    prompt = str(script.seen[0][0].parts[-1].content)
    assert 'setting: str = "Server=db.internal;Database=sales;User Id=app;Password=<masked>;"' in prompt


def test_the_rest_of_a_url_stays_visible() -> None:
    script = _run(URLS[0])
    prompt = str(script.seen[0][0].parts[-1].content)
    assert 'setting: str = "https://api.example.test/v1/items?api_key=<masked>&page=2"' in prompt


def test_a_password_in_a_url_query_masks_its_value_only() -> None:
    script = _run(f"https://api.example.test/x?db_password={CHOSEN_TEXT}&page=2")
    prompt = str(script.seen[0][0].parts[-1].content)
    assert 'setting: str = "https://api.example.test/x?db_password=<masked>&page=2"' in prompt


def test_the_scheme_of_an_authorization_value_stays_visible() -> None:
    script = _run(f"Bearer {GENERATED_TEXT}")
    prompt = str(script.seen[0][0].parts[-1].content)
    assert 'setting: str = "Bearer <masked>"' in prompt


def test_a_shell_working_directory_is_not_a_password() -> None:
    script = _run("PWD=/home/analyst/project")
    prompt = str(script.seen[0][0].parts[-1].content)
    assert 'setting: str = "PWD=/home/analyst/project"' in prompt
