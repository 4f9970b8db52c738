"""Tests for `nighthawk.redaction.ContextRedaction`."""

from __future__ import annotations

import pytest

from nighthawk.redaction import ContextRedaction

REDACTION = ContextRedaction()


@pytest.mark.parametrize(
    "name",
    ["openai_api_key", "OPENAI_API_KEY", "authToken", "db_password", "apiKeys", "client_secret", "sessionId",
     "passwd", "refresh_token", "AWS_SECRET_ACCESS_KEY", "key", "credentials", "cookie"],
)
def test_sensitive_looking_names_are_masked(name):
    assert REDACTION.is_sensitive_name(name)


@pytest.mark.parametrize(
    "name", ["keyboard", "monkey", "tokens_used", "max_tokens", "author", "keys", "passenger", "secretary", "data"]
)
def test_names_that_only_contain_a_sensitive_word_are_not_masked(name):
    assert not REDACTION.is_sensitive_name(name)


def test_allow_names_overrides_patterns():
    assert not ContextRedaction(allow_names=("sort_key",)).is_sensitive_name("sort_key")


def test_extra_mask_names_are_masked():
    assert ContextRedaction(extra_mask_names=("customer_ssn",)).is_sensitive_name("customer_ssn")


def test_disabled_redaction_masks_no_name():
    assert not ContextRedaction(enabled=False).is_sensitive_name("api_key")


@pytest.mark.parametrize(
    "secret",
    [
        "sk-abcdefghijklmnopqrstuvwx1234",
        "sk-proj-abcdefghijklmnopqrstuvwx1234",
        "sk-ant-api03-abcdefghijklmnopqrstuvwx",
        "AIza" + "A" * 35,
        "ghp_" + "a" * 36,
        "github_pat_" + "a" * 30,
        "AKIAABCDEFGHIJKLMNOP",
        "xoxb-1234567890-abcdef",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_scrub_text_replaces_credentials(secret):
    assert REDACTION.scrub_text(f"value: {secret} end") == "value: <masked> end"


def test_scrub_text_keeps_bearer_scheme():
    assert REDACTION.scrub_text("Authorization: Bearer abcdefghijklmnopqrstuv") == "Authorization: Bearer <masked>"


def test_scrub_text_masks_password_in_url():
    assert REDACTION.scrub_text("postgres://alice:hunter22@db/app") == "postgres://<masked>@db/app"


def test_scrub_text_masks_private_key_cut_before_its_end():
    assert REDACTION.scrub_text("k=-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN") == "k=<masked>"


def test_scrub_text_leaves_ordinary_text_unchanged():
    text = "the skeleton key opened a task-list of 20 items"
    assert REDACTION.scrub_text(text) == text


def test_scrub_text_uses_placeholder_literally():
    redaction = ContextRedaction(placeholder=r"[\1 hidden]")
    assert redaction.scrub_text("sk-abcdefghijklmnopqrstuvwx1234") == r"[\1 hidden]"


def test_disabled_redaction_scrubs_nothing():
    text = "sk-abcdefghijklmnopqrstuvwx1234"
    assert ContextRedaction(enabled=False).scrub_text(text) == text


def test_mask_value_masks_sensitive_name():
    assert REDACTION.mask_value("api_key", 12345) == "<masked>"


def test_mask_value_masks_a_string_that_is_wholly_a_credential():
    assert REDACTION.mask_value("model", " sk-abcdefghijklmnopqrstuvwx1234\n") == "<masked>"


def test_mask_value_returns_the_same_object_otherwise():
    value = ["sk-abcdefghijklmnopqrstuvwx1234"]
    assert REDACTION.mask_value("items", value) is value


def test_mask_value_keeps_text_that_only_contains_a_credential():
    text = "key is sk-abcdefghijklmnopqrstuvwx1234"
    assert REDACTION.mask_value(None, text) is text


def test_disabled_redaction_masks_no_value():
    assert ContextRedaction(enabled=False).mask_value("api_key", "x") == "x"


def test_invalid_pattern_is_rejected():
    with pytest.raises(ValueError, match=r"`ContextRedaction.mask_name_patterns` holds an invalid regex"):
        ContextRedaction(mask_name_patterns=("(",))


def test_a_bare_string_for_a_pattern_tuple_is_rejected():
    with pytest.raises(TypeError, match=r"`ContextRedaction.allow_names` must be a tuple of strings, got 'x'"):
        ContextRedaction(allow_names="x")  # type: ignore[arg-type]


def test_pattern_lists_are_stored_as_tuples():
    assert ContextRedaction(allow_names=["a"]).allow_names == ("a",)  # type: ignore[arg-type]
