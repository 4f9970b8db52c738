"""Validate and coerce values against Python type annotations (write bindings, attributes, return values)."""

from __future__ import annotations

import functools
import typing
from typing import Any

from .errors import ToolValidationError

__all__ = ["declared_attribute_type", "infer_binding_type", "is_unconstrained", "validate_value"]


def is_unconstrained(annotation: object) -> bool:
    """True for annotations that accept anything (`object`, `Any`, a missing annotation)."""
    return annotation is object or annotation is Any or annotation is None


@functools.lru_cache(maxsize=256)
def _adapter(annotation: Any) -> Any:
    import pydantic

    return pydantic.TypeAdapter(annotation, config=pydantic.ConfigDict(arbitrary_types_allowed=True))


def validate_value(annotation: Any, value: object) -> object:
    """Validate `value` against `annotation`, coercing where pydantic's lax mode does.

    Raises:
        ToolValidationError: The value does not fit.
    """
    if is_unconstrained(annotation):
        return value
    import pydantic

    try:
        adapter = _adapter(annotation)
    except TypeError:  # unhashable annotation (rare): build an adapter for this call only
        adapter = pydantic.TypeAdapter(annotation, config=pydantic.ConfigDict(arbitrary_types_allowed=True))
    except pydantic.PydanticSchemaGenerationError:
        if isinstance(annotation, type) and not isinstance(value, annotation):
            raise ToolValidationError(
                f"expected {annotation.__qualname__}, got {type(value).__qualname__}"
            ) from None
        return value
    try:
        return adapter.validate_python(value)
    except pydantic.ValidationError as exc:
        details = "; ".join(error["msg"] for error in exc.errors()[:3])
        raise ToolValidationError(f"expected {_type_label(annotation)}: {details}") from None


def _type_label(annotation: object) -> str:
    return annotation.__qualname__ if isinstance(annotation, type) else repr(annotation).replace("typing.", "")


def infer_binding_type(annotation: object, initial: object) -> object:
    """Upgrade an unannotated (`object`) write binding to the type of its initial value.

    `None` and bare `object()` initial values say nothing about the intended type, so they leave it open.
    """
    if annotation is not object or initial is None or type(initial) is object:
        return annotation
    return type(initial)


@functools.lru_cache(maxsize=256)
def declared_attribute_type(owner: type, attribute: str) -> object | None:
    """The type an owner class declares for an attribute (dataclass field, pydantic field, annotation)."""
    try:
        hints = typing.get_type_hints(owner)
    except Exception:  # unresolvable forward references: treat as undeclared
        return None
    declared = hints.get(attribute)
    return None if typing.get_origin(declared) is typing.ClassVar else declared
