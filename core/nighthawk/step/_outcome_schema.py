"""The JSON schema of the outcome object, offered to the model as the one output tool `nh_outcome`.

Plain dictionaries, no pydantic: the step is built with its schema (`build_step`), and the executor offers
the schema it is handed.
"""

from __future__ import annotations

__all__ = ["OUTCOME_KEY", "OUTCOME_TOOL", "outcome_object", "outcome_schema"]

OUTCOME_TOOL = "nh_outcome"
"""The one output tool that ends a step; its arguments are `{OUTCOME_KEY: <the outcome object>}`."""

OUTCOME_KEY = "outcome"
"""The one argument of `nh_outcome`, holding the outcome object."""

# Kinds whose outcome object has no key but `kind`: they share one branch of the union.
_BARE_KINDS = ("pass", "break", "continue")


def outcome_schema(allowed: tuple[str, ...], raise_types: tuple[str, ...]) -> dict[str, object]:
    """The JSON schema of the `nh_outcome` arguments: one key holding a union of the allowed kinds.

    Each branch is an object with exactly its kind's keys, all required and nothing else allowed, so the
    schema admits what `parse_outcome` accepts and nothing more. The form is the subset every provider takes
    (OpenAI strict tools, Anthropic, Gemini, llama.cpp's grammar conversion): a plain object at the top (no
    provider takes a union there), the union nested under it as `anyOf`, every property listed in `required`
    (the optional `raise_error_type` is nullable instead), single-value enums instead of `const`.
    `pass`/`break`/`continue` share one branch, since their objects have the same single key.
    """
    branches: list[dict[str, object]] = []
    bare = [kind for kind in allowed if kind in _BARE_KINDS]
    if bare:
        branches.append(_branch(bare, {}))
    if "return" in allowed:
        branches.append(_branch(["return"], {"return_expression": {"type": "string"}}))
    if "raise" in allowed:
        keys: dict[str, object] = {"raise_message": {"type": "string"}}
        if raise_types:  # with none offered the key is left out: the check refuses any name
            keys["raise_error_type"] = {"anyOf": [{"type": "string", "enum": list(raise_types)}, {"type": "null"}]}
        branches.append(_branch(["raise"], keys))
    union = branches[0] if len(branches) == 1 else {"anyOf": branches}
    return _object({OUTCOME_KEY: union})


def _branch(kinds: list[str], keys: dict[str, object]) -> dict[str, object]:
    return _object({"kind": {"type": "string", "enum": kinds}, **keys})


def _object(properties: dict[str, object]) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def outcome_object(arguments: object) -> object:
    """The outcome object inside `nh_outcome`'s arguments (`{"outcome": {...}}`, as the schema asks).

    The bare object (`{"kind": ...}`, what a model that ignores the wrapper sends, and what scripted tests
    write) is taken as it is: the check applies the same per-kind keys to both. Anything else is returned
    unchanged for the check to refuse.
    """
    if isinstance(arguments, dict) and OUTCOME_KEY in arguments and "kind" not in arguments:
        return arguments[OUTCOME_KEY] if len(arguments) == 1 else arguments
    return arguments
