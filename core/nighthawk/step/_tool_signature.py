"""Checks that a user tool can be offered to the model, run when it is registered.

Every tool is called with pydantic-ai's run context first, and pydantic-ai builds the schema of the other
parameters. Either failing at the first step would fail every step of every function from then on, so the
schema is built once at registration, where the mistake is made. Only a type the module has yet to define
(a forward reference) waits for the first step, where it exists.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..errors import ToolRegistrationError

__all__ = ["check_tool_signature"]

_CONTEXT_KINDS = (
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.VAR_POSITIONAL,
)
"""Parameter kinds that can receive the run context every tool is called with first."""


def check_tool_signature(name: str, function: Callable[..., Any], description: str | None) -> None:
    """Build the schema of the tool `name` now, so a tool the model could never be offered fails where it is
    declared instead of failing every later step.

    Raises:
        ToolRegistrationError: Naming the function, what is wrong and how to write it.
    """
    function_name = getattr(function, "__name__", name)
    label = f"tool {name!r}" + ("" if function_name == name else f" (`{function_name}`)")
    fix = (
        f"Add a first parameter for it, as in `def {function_name}(run_context, ...)` (unannotated, or annotated "
        "`RunContext[StepContext]`)"
    )
    try:
        first = next(iter(inspect.signature(function).parameters.values()), None)
    except (TypeError, ValueError) as exc:
        raise ToolRegistrationError(
            f"{label} has no signature Python can read ({exc}); register a plain function"
        ) from exc
    if first is None or first.kind not in _CONTEXT_KINDS:
        raise ToolRegistrationError(
            f"{label} takes no positional parameter to receive the run context, which every tool is called with. {fix}"
        )
    from pydantic.errors import PydanticUserError
    from pydantic_ai import Tool  # imported by the first tool registered, not by `import nighthawk`
    from pydantic_ai.exceptions import UserError

    try:
        Tool(function, takes_ctx=True, name=name, description=description)
    except UserError as exc:
        problem = str(exc).partition("\n")[2].strip() or str(exc)
        if "First parameter" in problem:
            raise ToolRegistrationError(
                f"{label}: its first parameter `{first.name}` is annotated `{_annotation(first)}`, but the first "
                f"parameter receives the run context, not an argument from the model. {fix}"
            ) from exc
        raise ToolRegistrationError(f"{label}: pydantic-ai cannot build its schema: {problem}") from exc
    except NameError:
        # An annotation names a type the module defines further down (usual with postponed annotations): the
        # schema can only be built once the module has run, so it is left to the first step that offers it.
        return
    except PydanticUserError as exc:
        raise ToolRegistrationError(
            f"{label}: pydantic-ai cannot build a schema for its parameters ({str(exc).split('. ')[0]}). Give "
            "each parameter after the first a type pydantic can validate (str, int, a list, a pydantic model, a "
            "dataclass, ...)"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - a partial or a callable object fails inside pydantic-ai in its own way
        raise ToolRegistrationError(
            f"{label}: pydantic-ai cannot read it as a tool ({type(exc).__name__}: {exc}). Register a plain "
            f"function, for example `def {function_name}(run_context, ...)` that calls it"
        ) from exc


def _annotation(parameter: inspect.Parameter) -> str:
    annotation = parameter.annotation
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
