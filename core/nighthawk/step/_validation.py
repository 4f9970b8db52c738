"""Validate values against the types of write bindings, attribute targets and return values.

Two regimes:

* A **declared** type (an annotation the user wrote) validates like pydantic's lax mode: a dict becomes
  the declared model, `"3"` becomes `3` for an `int`. Classes pydantic cannot build a schema for are
  checked with `isinstance`.
* An **inferred** type (`InferredType`, the type of an unannotated binding's initial value) never changes
  data: it keeps instances as they are and allows only lossless numeric conversions (`2` for a `float`,
  a NumPy integer for an `int`). Lax coercion there would silently turn a DataFrame into its column names.

pydantic is imported on the first validation, not with nighthawk.
"""

from __future__ import annotations

import functools
import numbers
import operator
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any

from ..errors import NighthawkError, ToolValidationError

__all__ = [
    "InferredType",
    "ValidationSetupError",
    "declared_attribute_type",
    "infer_binding_type",
    "is_unconstrained",
    "resolve_annotation",
    "type_label",
    "validate_value",
]

_MAX_PROBLEMS = 3
_MAX_PROBLEM_CHARS = 160


class ValidationSetupError(NighthawkError):
    """The runtime could not build a validator for a type (an unresolved forward reference, ...).

    Not the model's mistake: tools report it with the `internal` kind.
    """


@dataclass(frozen=True)
class InferredType:
    """The type of an unannotated binding's initial value: instances and lossless conversions only."""

    type: type

    def __repr__(self) -> str:
        return f"{type_label(self.type)} (inferred from the initial value)"


def is_unconstrained(annotation: object) -> bool:
    """True for annotations that accept anything (`object`, `Any`, a missing annotation)."""
    return annotation is object or annotation is Any or annotation is None


def type_label(annotation: object) -> str:
    """A short readable name of a type for messages (`Report`, `list[Report]`, `int | None`)."""
    if isinstance(annotation, InferredType):
        return repr(annotation)
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__qualname__.rpartition("<locals>.")[2]
    return repr(annotation).replace("typing.", "").replace("typing_extensions.", "").replace("__main__.", "")


def resolve_annotation(annotation: object, namespace: dict[str, object]) -> object:
    """Evaluate the quoted parts of an annotation in `namespace`, at any depth: `"Report"` (or all of it under
    `from __future__ import annotations`) and `Optional["Report"]` alike. `Annotated` metadata is kept.

    Raises:
        Exception: A quoted name that `namespace` does not define.
    """
    if annotation is None or (isinstance(annotation, type) and not typing.get_args(annotation)):
        return annotation  # nothing quoted inside (and `None` must stay `None`, not become `NoneType`)
    # `typing.get_type_hints` is what resolves nested forward references; it reads them off an object.
    holder = types.SimpleNamespace(__annotations__={"annotation": annotation})
    return typing.get_type_hints(holder, globalns=namespace, include_extras=True)["annotation"]


# --- adapters ---------------------------------------------------------------------------------------


def _is_legacy_typed_dict(annotation: object) -> bool:
    # pydantic refuses `typing.TypedDict` before Python 3.12 (it needs `typing_extensions.TypedDict`).
    return (
        sys.version_info < (3, 12)
        and isinstance(annotation, type)
        and typing.is_typeddict(annotation)
        and type(annotation).__module__ == "typing"
    )


def _compatible(annotation: Any) -> Any:
    """`annotation` with every `typing.TypedDict` rebuilt as a `typing_extensions.TypedDict` (Python 3.11)."""
    if sys.version_info >= (3, 12):
        return annotation
    if _is_legacy_typed_dict(annotation):
        import typing_extensions

        hints = typing.get_type_hints(annotation, include_extras=True)
        fields = {
            name: (typing_extensions.Required if name in annotation.__required_keys__ else typing_extensions.NotRequired)[
                _compatible(hint)
            ]
            for name, hint in hints.items()
        }
        rebuilt = typing_extensions.TypedDict(annotation.__name__, fields)  # type: ignore[operator]
        rebuilt.__qualname__ = annotation.__qualname__
        return rebuilt
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if not args or origin is typing.Literal:
        return annotation
    new_args = tuple(_compatible(arg) for arg in args)
    if all(new is old for new, old in zip(new_args, args, strict=True)):
        return annotation
    if origin in (typing.Union, types.UnionType):
        return typing.Union[new_args]  # noqa: UP007 - rebuilding a union from a tuple of members
    if isinstance(annotation, types.GenericAlias):
        return types.GenericAlias(origin, new_args)
    return annotation.copy_with(new_args)


@functools.lru_cache(maxsize=256)
def _adapter(annotation: Any) -> Any:
    """A pydantic TypeAdapter, or `None` when pydantic cannot build a schema (checked by `isinstance`)."""
    import pydantic

    annotation = _compatible(annotation)
    try:
        try:
            return pydantic.TypeAdapter(annotation, config=pydantic.ConfigDict(arbitrary_types_allowed=True))
        except pydantic.PydanticUserError as exc:
            # Models, dataclasses and TypedDicts carry their own configuration and refuse another one.
            if exc.code != "type-adapter-config-unused":
                raise
            return pydantic.TypeAdapter(annotation)
    except pydantic.PydanticSchemaGenerationError:
        return None
    except Exception as exc:
        raise ValidationSetupError(f"cannot build a validator for {type_label(annotation)}: {exc}") from exc


def _get_adapter(annotation: Any) -> Any:
    try:
        return _adapter(annotation)
    except TypeError as exc:  # unhashable annotation (rare): build an adapter for this call only
        if "unhashable" not in str(exc):
            raise
        return _adapter.__wrapped__(annotation)


# --- validation -------------------------------------------------------------------------------------


def validate_value(annotation: Any, value: object) -> object:
    """Validate `value` against a declared annotation or an `InferredType`; return the value to store.

    Raises:
        ToolValidationError: The value does not fit; the message names the expected type and the first problems.
        ValidationSetupError: No validator can be built for the type (not the value's fault).
    """
    if is_unconstrained(annotation):
        return value
    if isinstance(annotation, InferredType):
        return _validate_inferred(annotation, value)
    import pydantic

    adapter = _get_adapter(annotation)
    if adapter is None:
        return _validate_by_isinstance(annotation, value)
    try:
        return adapter.validate_python(value)
    except pydantic.ValidationError as exc:
        raise ToolValidationError(_mismatch(annotation, value, _problems(exc))) from None
    except pydantic.PydanticUserError as exc:  # e.g. a model with forward references that never resolve
        raise ValidationSetupError(f"cannot validate against {type_label(annotation)}: {exc}") from exc


def _validate_by_isinstance(annotation: Any, value: object) -> object:
    try:
        fits = isinstance(value, annotation)
    except TypeError as exc:
        raise ValidationSetupError(
            f"cannot validate against {type_label(annotation)}: pydantic has no schema for it and it is not a class"
        ) from exc
    if not fits:
        raise ToolValidationError(_mismatch(annotation, value, ()))
    return value


def _validate_inferred(inferred: InferredType, value: object) -> object:
    expected = inferred.type
    is_flag = isinstance(value, bool) and expected is not bool  # `True` is an int to Python, never a count
    if isinstance(value, expected) and not is_flag:
        return value
    if not is_flag:
        if expected is int and isinstance(value, numbers.Integral):
            return operator.index(value)
        if expected is float and isinstance(value, numbers.Real):
            converted = float(value)
            if converted == value:
                return converted
    raise ToolValidationError(
        _mismatch(inferred, value, ("the binding has no annotation, so only values of that type are accepted",))
    )


def _problems(exc: Any) -> tuple[str, ...]:
    problems = []
    for error in exc.errors(include_url=False)[:_MAX_PROBLEMS]:
        location = ".".join(map(str, error.get("loc", ())))
        text = f"{location}: {error['msg']}" if location else str(error["msg"])
        problems.append(text if len(text) <= _MAX_PROBLEM_CHARS else text[: _MAX_PROBLEM_CHARS - 3] + "...")
    more = exc.error_count() - len(problems)
    if more > 0:
        problems.append(f"and {more} more")
    return tuple(problems)


def _mismatch(annotation: object, value: object, problems: tuple[str, ...]) -> str:
    message = f"expected {type_label(annotation)}, got {type(value).__qualname__}"
    return f"{message} ({'; '.join(problems)})" if problems else message


def infer_binding_type(annotation: object, initial: object) -> object:
    """Type an unannotated (`object`) write binding by its initial value, as an `InferredType`.

    `None` and bare `object()` initial values say nothing about the intended type, so they leave it open.
    """
    if annotation is not object or initial is None or type(initial) is object:
        return annotation
    return InferredType(type(initial))


@functools.lru_cache(maxsize=256)
def declared_attribute_type(owner: type, attribute: str) -> object | None:
    """The type an owner class declares for an attribute (dataclass field, pydantic field, annotation)."""
    try:
        hints = typing.get_type_hints(owner)
    except Exception:  # unresolvable forward references: treat as undeclared
        return None
    declared = hints.get(attribute)
    return None if typing.get_origin(declared) is typing.ClassVar else declared
