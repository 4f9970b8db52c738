"""Secrets that look like something else, and public values that look like secrets.

Each value is held by a neutral name (a credential-named variable would make any value a secret) and read
by a scripted model, in the prompt and through `nh_eval`: a Discord bot token and a URL password holding an
`@` must not reach the model in any piece; the ids, payloads and public keys a notebook handles every day,
and the names that merely start like a credential, must reach it as they are.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

import nighthawk as nh
import pytest
from scripting import Script, call, finish, scripted_executor


@nh.natural_function
def look(value: object) -> None:
    """natural
    Describe <value>.
    """


def run(value: object, *expressions: str) -> Script:
    """`look(value)` with a model that evaluates `expressions` (the value itself by default)."""
    rounds = [[call("nh_eval", expression=expression) for expression in expressions or ("value",)], [finish()]]
    executor, script = scripted_executor(*rounds)
    with nh.run(executor):
        look(value)
    return script


def model_saw(script: Script) -> str:
    return "\n".join([str(script.seen[0][0].parts[-1].content), *script.last_tool_results()])


# --- leaks -----------------------------------------------------------------------------------------------

DISCORD_TOKENS = [
    "MTA1NjQ2NzM4OTI0MzU2ODE2MA.GhJkLm.Xy9zQwErTyUiOpAsDfGhJkLzXcVbNm12345",  # a 19-digit bot id
    "ODk4NzY1NDMyMTA5ODc2NTQz.YH7pQw.a8F3kLmN0pQrStUvWxYz1234567",  # an 18-digit id, a 27-character HMAC
    "NzUzOTE0ODIwMTI4NzAwOTI4.X2bQ1a.Q-9kfT_3pLmN0xYz8WvUtSrQpOnMlKjIhGf",
]


@pytest.mark.parametrize("token", DISCORD_TOKENS)
def test_a_discord_bot_token_under_a_neutral_name_never_reaches_the_model(token: str) -> None:
    seen = model_saw(run(token, "value", "value.split('.')", "{'bot': value}"))
    for piece in (token, token.split(".")[2]):
        assert piece not in seen


def test_a_discord_bot_token_in_a_sentence_is_masked() -> None:
    seen = model_saw(run(f"Bot {DISCORD_TOKENS[0]} joined", "value"))
    assert DISCORD_TOKENS[0] not in seen
    assert "Bot <masked> joined" in seen


@pytest.mark.parametrize(
    "url",
    [
        "postgres://app:Xq7@pR2v@db.example.com:5432/sales",
        "mysql://app:Xq7@pR2v@v9@db.internal/x",
        "https://app:Xq7@pR2v@api.example.com/v1?page=2",
    ],
)
def test_a_url_password_holding_an_at_sign_never_reaches_the_model(url: str) -> None:
    seen = model_saw(run(url, "value", "__import__('urllib.parse').parse.urlsplit(value).password"))
    password = url.split("://", 1)[1].split(":", 1)[1].rsplit("@", 1)[0]
    assert password not in seen
    assert "pR2v" not in seen


def test_the_host_of_a_url_whose_password_holds_an_at_sign_stays_visible() -> None:
    seen = model_saw(run("postgres://app:Xq7@pR2v@db.example.com:5432/sales"))
    assert "postgres://<masked>@db.example.com:5432/sales" in seen


# --- innocents -------------------------------------------------------------------------------------------


def _png(width: int, height: int) -> bytes:
    rows = b"".join(b"\x00" + bytes(range(width * 3)) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


INNOCENT_VALUES: dict[str, Any] = {
    "a raw base64 PNG": base64.b64encode(_png(2, 2)).decode(),
    "a base64 JSON payload": base64.b64encode(json.dumps({"user": "alice", "role": "admin", "exp": 1735689600}).encode()).decode(),
    "a URL-safe base64 JSON payload": base64.urlsafe_b64encode(b'{"page":2,"cursor":"a1b2","sort":"desc"}').decode(),
    "an IPFS CID": "QmXoypizjW3WknFiJnKLwHCnL72vedxjQkDDP1mXWo6uco",
    "a Bitcoin P2SH address": "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",
    "a Bitcoin P2PKH address": "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2",
    "a Google Sheets id": "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms",
    "a Google Drive file id": "1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVw",
    "a Stripe publishable key": "pk_live_51H8kQ2LkdIwHu7ixT4aXkQ9s0JzYbW3cRvPq8mN6oL1dE2fG3hI4jK5lM6nO7pQ8rS9tU0v",
    "an ssh public key body": "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    "an ssh public key line": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop",
}


@pytest.mark.parametrize("kind", sorted(INNOCENT_VALUES))
def test_a_public_value_that_looks_random_reaches_the_model_as_it_is(kind: str) -> None:
    value = INNOCENT_VALUES[kind]
    script = run(value)
    assert json.loads(script.last_tool_results()[0])["value"] == value
    assert "<masked>" not in model_saw(script)


def test_a_base64_json_payload_holding_a_password_stays_masked() -> None:
    payload = base64.b64encode(json.dumps({"user": "alice", "password": "Xq7-pR2v-Lm9w"}).encode()).decode()
    assert payload not in model_saw(run(payload))


def test_a_bitcoin_private_key_stays_masked() -> None:
    wif = "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"  # the checksum holds, but version 0x80
    assert wif not in model_saw(run(wif))


def test_a_stripe_secret_key_stays_masked() -> None:
    key = "sk_live_51H8kQ2LkdIwHu7ixT4aXkQ9s0JzYbW3cRvPq8mN6oL1dE2fG3hI4jK5lM6nO7pQ8rS9tU0v"
    assert key not in model_saw(run(key))


@nh.natural_function
def plan_party(secret_santa: dict, cookie_banner_text: str, password_hint: str) -> None:
    """natural
    Plan with <secret_santa>, <cookie_banner_text> and <password_hint>.
    """


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("secret_santa", {"alice": "bob", "bob": "carol-2026-xmas", "carol": "alice"}),
        ("cookie_banner_text", "We use cookies: sess-2f9Kq1 keeps you signed in."),
        ("password_hint", "first pet + birth year"),
    ],
)
def test_a_name_that_only_starts_like_a_credential_shows_its_value(name: str, value: object) -> None:
    values = {"secret_santa": {}, "cookie_banner_text": "", "password_hint": "", name: value}
    executor, script = scripted_executor([call("nh_eval", expression=name)], [finish()])
    with nh.run(executor):
        plan_party(**values)
    assert json.loads(script.last_tool_results()[0])["value"] == value
    assert "<masked>" not in str(script.seen[0][0].parts[-1].content)
