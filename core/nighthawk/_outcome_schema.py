"""The JSON schema of the outcome object, offered to the model as the one output tool `nh_outcome`.

Plain dictionaries, no pydantic: the step is built with its schema (`build_step`), and the executor offers
the schema it is handed.
"""

from __future__ import annotations

__all__ = ["OUTCOME_TOOL", "outcome_schema"]

OUTCOME_TOOL = "nh_outcome"
"""The one output tool that ends a step; its arguments are the outcome object."""


def outcome_schema(allowed: tuple[str, ...], raise_types: tuple[str, ...]) -> dict[str, object]:
    """The JSON schema of the outcome object a step may end with.

    One flat object keeps the tool definition short (one tool instead of one per kind, no per-kind
    titles or descriptions: the system prompt explains the kinds once). `kind` is an enum of the allowed
    kinds and `raise_error_type` an enum of the offered exception names; which keys go with which kind is
    enforced by `parse_outcome`, whose refusal reaches the model as a correction.
    """
    properties: dict[str, object] = {"kind": {"type": "string", "enum": list(allowed)}}
    if "return" in allowed:
        properties["return_expression"] = {"type": "string"}
    if "raise" in allowed:
        properties["raise_message"] = {"type": "string"}
        properties["raise_error_type"] = {"type": "string", "enum": list(raise_types)}
    return {"type": "object", "properties": properties, "required": ["kind"], "additionalProperties": False}
