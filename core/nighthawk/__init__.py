"""Nighthawk: Python controls the flow, an LLM executes small Natural blocks against live Python state.

`import nighthawk` imports neither IPython nor pydantic-ai; `%load_ext nighthawk` forwards to
`nighthawk_ipython`.
"""

from __future__ import annotations

from typing import Any as _Any

from .configuration import (
    JsonableValue,
    StepContextLimits,
    StepExecutorConfiguration,
    StepExecutorConfigurationPatch,
    StepPromptTemplates,
)
from .decorator import natural_function
from .errors import (
    ExecutionError,
    NaturalParseError,
    NighthawkError,
    ToolEvaluationError,
    ToolRegistrationError,
    ToolValidationError,
)
from .executor import AgentStepExecutor, StepExecutor
from .redaction import ContextRedaction
from .runtime import (
    ExecutionContext,
    get_execution_context,
    get_step_executor,
    run,
    scope,
    set_default_step_executor,
)
from .step import StepContext, get_current_step_context
from .tools import tool

__all__ = [
    "AgentStepExecutor",
    "ContextRedaction",
    "ExecutionContext",
    "ExecutionError",
    "JsonableValue",
    "NaturalParseError",
    "NighthawkError",
    "StepContext",
    "StepContextLimits",
    "StepExecutor",
    "StepExecutorConfiguration",
    "StepExecutorConfigurationPatch",
    "StepPromptTemplates",
    "ToolEvaluationError",
    "ToolRegistrationError",
    "ToolValidationError",
    "get_current_step_context",
    "get_execution_context",
    "get_step_executor",
    "load_ipython_extension",
    "natural_function",
    "run",
    "scope",
    "set_default_step_executor",
    "tool",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: _Any) -> None:
    """`%load_ext nighthawk`: forwards to `nighthawk_ipython` (imported only now)."""
    import nighthawk_ipython

    nighthawk_ipython.load_ipython_extension(ipython)


def unload_ipython_extension(ipython: _Any) -> None:
    """`%unload_ext nighthawk`."""
    import nighthawk_ipython

    nighthawk_ipython.unload_ipython_extension(ipython)
