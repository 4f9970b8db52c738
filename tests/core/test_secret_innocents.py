"""Values that cannot be secrets reach the model as they are, though their names hold a credential word.

A data scientist's scope is full of them: tokenizer outputs (`input_ids`, `token_type_ids`), special-token
maps (`pad_token`), budgets (`token_budget`), settings (`auth_enabled=True`, `jwt_algorithm="HS256"`,
`salt=16`) and page metadata (an integrity hash). Masking them hides the data the block is about. Each is
checked in the prompt a scripted model receives (locals and the value of a dict key) and in the result of
an `nh_eval` that reads it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import nighthawk as nh
from scripting import Script, call, finish, scripted_executor

INTEGRITY = "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC"
SHA256_INTEGRITY = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
SHA512_INTEGRITY = "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="

# name -> value: each is bound to a local of that name, and kept under that key in a dict.
INNOCENTS: dict[str, Any] = {
    "password_policy": {"min_length": 12, "require_digit": True},
    "token_budget": 4000,
    "token_ids": [101, 7592, 2088, 102],
    "input_ids": [[101, 7592, 102], [101, 2088, 102]],
    "token_type_ids": [0, 0, 0, 0],
    "attention_mask": [1, 1, 1, 0],
    "jwt_algorithm": "HS256",
    "auth_provider": "google",
    "auth_enabled": True,
    "salt": 16,
    "integrity": INTEGRITY,
    "sha256_integrity": SHA256_INTEGRITY,
    "sha512_integrity": SHA512_INTEGRITY,
    # more of a notebook's own
    "pad_token": "<pad>",
    "eos_token": "</s>",
    "pad_token_id": 0,
    "use_auth_token": False,
    "auth_method": "oauth2",
    "token_usage": {"prompt_tokens": 120, "completion_tokens": 40},
    "api_key_env": "OPENAI_API_KEY",
    "password_min_length": 12,
    "session_timeout": 30,
    "cookie_consent": True,
    "token": "bearer",
    "auth": "basic",
    "api_key": None,
    "secret_rounds": 10,
    "search_url": "https://huggingface.co/api/models?search=bert&sort=downloads&limit=5&sort_key=likes",
    "note": "Bearer tokens expire after an hour; basic statistics come first; token count 512.",
}


@nh.natural_function
def look_at_everything(
    password_policy: dict, token_budget: int, token_ids: list, input_ids: list, token_type_ids: list,
    attention_mask: list, jwt_algorithm: str, auth_provider: str, auth_enabled: bool, salt: int, integrity: str,
    sha256_integrity: str, sha512_integrity: str, pad_token: str, eos_token: str, pad_token_id: int,
    use_auth_token: bool, auth_method: str, token_usage: dict, api_key_env: str, password_min_length: int,
    session_timeout: int, cookie_consent: bool, token: str, auth: str, api_key: None, secret_rounds: int,
    search_url: str, note: str, config: dict,
) -> None:
    """natural
    Summarise <config>, <password_policy>, <token_budget>, <token_ids>, <input_ids>, <token_type_ids>,
    <attention_mask>, <jwt_algorithm>, <auth_provider>, <auth_enabled>, <salt>, <integrity>,
    <sha256_integrity>, <sha512_integrity>, <pad_token>, <eos_token>, <pad_token_id>, <use_auth_token>,
    <auth_method>, <token_usage>, <api_key_env>, <password_min_length>, <session_timeout>, <cookie_consent>,
    <token>, <auth>, <api_key>, <secret_rounds>, <search_url> and <note>.
    """


@pytest.fixture(scope="module")
def script() -> Script:
    rounds = [[call("nh_eval", expression=name) for name in INNOCENTS], [finish()]]
    # Room for the whole `config` dict, so every key of it is shown.
    executor, script = scripted_executor(*rounds, context_limits=nh.StepContextLimits(value_max_tokens=2_000))
    with nh.run(executor):
        look_at_everything(**INNOCENTS, config=dict(INNOCENTS))
    return script


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _prompt(script: Script) -> str:
    return str(script.seen[0][0].parts[-1].content)


@pytest.mark.parametrize("name", list(INNOCENTS))
def test_an_innocent_local_reaches_the_prompt_unmasked(script: Script, name: str) -> None:
    line = next(line for line in _prompt(script).splitlines() if line.startswith(f"{name}: "))
    assert line.endswith(f" = {_compact(INNOCENTS[name])}"), line


@pytest.mark.parametrize("name", list(INNOCENTS))
def test_an_innocent_dict_value_reaches_the_prompt_unmasked(script: Script, name: str) -> None:
    (config_line,) = [line for line in _prompt(script).splitlines() if line.startswith("config: ")]
    assert f"{_compact(name)}:{_compact(INNOCENTS[name])}" in config_line


@pytest.mark.parametrize("name", list(INNOCENTS))
def test_an_innocent_value_read_by_an_expression_reaches_the_model_unmasked(script: Script, name: str) -> None:
    results = [json.loads(result)["value"] for result in script.last_tool_results()]
    assert results[list(INNOCENTS).index(name)] == INNOCENTS[name]


def test_nothing_of_the_innocent_corpus_is_masked(script: Script) -> None:
    texts = [_prompt(script), *script.last_tool_results()]
    assert not any("<masked>" in text for text in texts)
