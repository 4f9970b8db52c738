"""The canonical form of a model request and its digest, the key a replay store finds an answer by.

What two identical runs do not share (timestamps, run ids, provider response ids, usage) is left out and
tool call ids are renumbered, so the same program asking the same question gives the same key. The text and
tool arguments in the messages are scrubbed of secret values and credential-looking text; instructions and
tool definitions are kept as sent. An image or document is kept as its sha256 and size, never its bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic_core
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.models import ModelRequestParameters

from ..secrets._scrubber import current_scrubber
from ..secrets import ContextRedaction

__all__ = [
    "RESPONSE_DROPPED_KEYS",
    "canonical_request",
    "canonical_with_ids",
    "clean",
    "digest_of",
    "outline_of",
    "request_digest",
    "round_of",
]

# Message fields that differ between two runs of the same program, or that never reach the model.
_VOLATILE_KEYS = frozenset(
    {
        "canonical_system",
        "conversation_id",
        "failed_attempts",
        "finish_reason",
        "history_digest",
        "id",
        "instructions",  # taken once from the request parameters instead of from every message
        "metadata",
        "model_id",
        "model_name",
        "provider_details",
        "provider_name",
        "provider_response_id",
        "provider_url",
        "run_id",
        "signature",
        "state",
        "timestamp",
        "usage",
        "workspace_ref",
    }
)
# A stored response keeps what a reader wants to know: which model answered, why it stopped, what it cost.
RESPONSE_DROPPED_KEYS = _VOLATILE_KEYS - {"model_name", "provider_name", "finish_reason", "usage"}
# Values written by the model or a tool: stored exactly (only scrubbed), never pruned.
_OPAQUE_KEYS = frozenset({"args", "content"})
# What a model sees of a tool definition.
_TOOL_KEYS = ("name", "description", "parameters_json_schema", "strict")


class _CallIds:
    """Renumbers tool call ids in order of first appearance: `call_1`, `call_2`, ..."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def __call__(self, original: str) -> str:
        if original not in self._ids:
            self._ids[original] = f"call_{len(self._ids) + 1}"
        return self._ids[original]


def _scrub(value: Any, redaction: ContextRedaction) -> Any:
    """`value` with every string scrubbed of the step's secret values and of credential-looking text."""
    if isinstance(value, str):
        return redaction.scrub_text(current_scrubber().scrub_values(value))
    if isinstance(value, dict):
        return {key: _scrub(item, redaction) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item, redaction) for item in value]
    return value


def _by_hash(value: Any) -> Any:
    """Multimodal content with each binary part as its media type, size and sha256 instead of base64 data:
    a store file stays small, and the same picture matches whatever its identifier."""
    if not isinstance(value, list):
        return value
    return [_hashed(item) if isinstance(item, dict) and item.get("kind") == "binary" else item for item in value]


def _hashed(binary: dict[str, Any]) -> dict[str, Any]:
    # pydantic writes bytes as URL-safe base64; read either alphabet.
    data = base64.b64decode(str(binary.get("data") or "").replace("-", "+").replace("_", "/"), validate=True)
    hashed = {"kind": "binary", "media_type": binary.get("media_type"), "bytes": len(data)}
    hashed["sha256"] = hashlib.sha256(data).hexdigest()
    if binary.get("vendor_metadata"):
        hashed["vendor_metadata"] = binary["vendor_metadata"]
    return hashed


def clean(value: Any, drop: frozenset[str], ids: _CallIds, redaction: ContextRedaction) -> Any:
    """A serialised message without `drop` keys, `None` fields and zero usage counts; call ids renumbered.

    Only what the model or a tool wrote (`_OPAQUE_KEYS`) is scrubbed: the structure (`kind`, `part_kind`,
    tool names) is the store's own and is kept as it is.
    """
    if isinstance(value, list):
        return [clean(item, drop, ids, redaction) for item in value]
    if not isinstance(value, dict):
        return value
    cleaned: dict[str, Any] = {}
    for key in sorted(value):
        item = value[key]
        if key in drop or item is None:
            continue
        if key == "tool_call_id" and isinstance(item, str):
            cleaned[key] = ids(item)
        elif key == "args" and isinstance(item, str):
            try:  # providers send arguments as JSON text, test models as a dict: store the readable form
                cleaned[key] = _scrub(json.loads(item), redaction)
            except ValueError:
                cleaned[key] = _scrub(item, redaction)
        elif key in _OPAQUE_KEYS:
            cleaned[key] = _scrub(_by_hash(item), redaction)
        elif key == "usage" and isinstance(item, dict):
            cleaned[key] = {name: count for name, count in sorted(item.items()) if count not in (0, None, {})}
        else:
            cleaned[key] = clean(item, drop, ids, redaction)
    return cleaned


def _jsonable(value: Any) -> Any:
    return pydantic_core.to_jsonable_python(value, fallback=repr)


def _tool(definition: Any) -> dict[str, Any]:
    data = _jsonable(definition)
    return {key: data[key] for key in _TOOL_KEYS if data.get(key) is not None}


def _instructions(messages: Sequence[ModelMessage], parameters: ModelRequestParameters) -> str | None:
    if parameters.instruction_parts is not None:
        return "\n\n".join(part.content for part in parameters.instruction_parts) or None
    for message in reversed(messages):
        if message.kind == "request" and message.instructions is not None:
            return message.instructions
    return None


# How a request travels, not what it asks: a changed timeout, retry count or prompt-cache hint must not make a
# store miss (the cache key names the block's line, which moves when code above it is edited).
_TRANSPORT_SETTINGS = frozenset(
    {
        "timeout",
        "request_timeout",
        "max_retries",
        "openai_prompt_cache_key",
        "openai_prompt_cache_retention",
        "anthropic_cache_tool_definitions",
        "anthropic_cache_instructions",
        "anthropic_cache_messages",
        "anthropic_cache",
    }
)


def _settings(settings: Mapping[str, Any] | None, redaction: ContextRedaction) -> dict[str, Any]:
    # Headers and credential-like settings never reach the file; the model does not see them anyway.
    return {
        name: _jsonable(value)
        for name, value in sorted((settings or {}).items())
        if name not in _TRANSPORT_SETTINGS
        and "header" not in name.lower()
        and not ContextRedaction().is_sensitive_name(name)
        and not redaction.is_sensitive_name(name)
    }


def canonical_with_ids(
    messages: Sequence[ModelMessage],
    settings: Mapping[str, Any] | None,
    parameters: ModelRequestParameters,
    redaction: ContextRedaction,
) -> tuple[dict[str, Any], _CallIds]:
    """`canonical_request` and the call id numbering it used, which the stored response continues."""
    ids = _CallIds()
    output = {
        "mode": parameters.output_mode,
        "tools": [_tool(definition) for definition in parameters.output_tools],
        "object": _jsonable(parameters.output_object),
        "template": parameters.prompted_output_template,
        "allow_text": parameters.allow_text_output,
    }
    request = {
        "instructions": _instructions(messages, parameters),
        "tools": [_tool(definition) for definition in parameters.function_tools],
        "native_tools": [_jsonable(tool) for tool in parameters.native_tools],
        "output": {key: value for key, value in output.items() if value is not None},
        "settings": _settings(settings, redaction),
        "messages": clean(ModelMessagesTypeAdapter.dump_python(list(messages), mode="json"), _VOLATILE_KEYS, ids, redaction),
    }
    # Instructions and tool definitions are the protocol: stored as sent. The messages were scrubbed above.
    return {key: value for key, value in request.items() if value not in (None, [], {})}, ids


def canonical_request(
    messages: Sequence[ModelMessage],
    model_settings: Mapping[str, Any] | None,
    model_request_parameters: ModelRequestParameters,
    *,
    redaction: ContextRedaction | None = None,
) -> dict[str, Any]:
    """The part of a model request that decides the answer, as JSON data without volatile fields.

    Args:
        messages: The history pydantic-ai hands to the model.
        model_settings: Settings of the request; headers and credential-like names are left out.
        model_request_parameters: Tool definitions, output tools and instructions of the request.
        redaction: Scrubs credential-looking text; defaults to `ContextRedaction()`.
    """
    return canonical_with_ids(messages, model_settings, model_request_parameters, redaction or ContextRedaction())[0]


def digest_of(request: Mapping[str, Any]) -> str:
    """sha256 (hex) of `request` as compact JSON with sorted keys: the key a store finds an answer by."""
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def request_digest(
    messages: Sequence[ModelMessage],
    model_settings: Mapping[str, Any] | None,
    model_request_parameters: ModelRequestParameters,
) -> str:
    """The sha256 (hex) of the canonical request: equal for two requests a model cannot tell apart."""
    return digest_of(canonical_request(messages, model_settings, model_request_parameters))


def round_of(messages: Sequence[ModelMessage]) -> int:
    """Which request of a step `messages` is: 1 for the first, one more after each model response."""
    return 1 + sum(1 for message in messages if message.kind == "response")


def outline_of(request: Mapping[str, Any]) -> tuple[frozenset[str], int]:
    """Digests of a request's top-level fields and the size of its messages, to rank near misses cheaply."""
    fields_ = frozenset(f"{key}:{digest_of({key: value})}" for key, value in request.items() if key != "messages")
    return fields_, len(json.dumps(request.get("messages"), ensure_ascii=False, default=str))
