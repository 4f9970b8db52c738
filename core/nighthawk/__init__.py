"""Nighthawk: Python controls the flow, an LLM executes small Natural blocks against live Python state.

`import nighthawk` imports neither IPython nor pydantic-ai, nor Ray (`nighthawk.ray` is imported when first
used); `%load_ext nighthawk` forwards to `nighthawk_ipython`.
"""

from __future__ import annotations

from typing import Any as _Any

from .budget import StepUsage, UsageBudget, budget, session_usage
from .configuration import (
    JsonableValue,
    StepContextLimits,
    StepExecutorConfiguration,
    StepExecutorConfigurationPatch,
    StepPromptTemplates,
    to_jsonable_value,
)
from .decorator import natural_function
from .errors import (
    BudgetExceededError,
    ExecutionError,
    MapItemError,
    MapStoppedError,
    ModelConfigurationError,
    NaturalParseError,
    NighthawkError,
    OperationRefusedError,
    OversightRejectedError,
    StepAbortedError,
    ToolEvaluationError,
    ToolRegistrationError,
    ToolValidationError,
    last_error,
)
from .secrets import ContextRedaction
from .runtime import (
    ExecutionContext,
    ExecutionRef,
    StepExecutor,
    UsageMeter,
    get_current_usage_meter,
    get_execution_context,
    get_execution_ref,
    get_implicit_references,
    get_step_executor,
    get_system_prompt_suffix_fragments,
    get_user_prompt_suffix_fragments,
    run,
    scope,
    set_default_step_executor,
)
from .step import StepContext, get_current_step_context

__all__ = [
    "AgentStepExecutor",
    "BudgetExceededError",
    "ClaudeCodeCliModelSettings",
    "ClaudeCodeSdkModelSettings",
    "CodexModelSettings",
    "ContextRedaction",
    "ExecutionContext",
    "ExecutionError",
    "ExecutionRef",
    "JsonableValue",
    "MapItemError",
    "MapResult",
    "MapStoppedError",
    "ModelConfigurationError",
    "MapUsage",
    "NaturalParseError",
    "NighthawkError",
    "OperationRefusedError",
    "OversightRejectedError",
    "StepAbortedError",
    "StepContext",
    "StepContextLimits",
    "StepExecutor",
    "StepExecutorConfiguration",
    "StepExecutorConfigurationPatch",
    "StepPromptTemplates",
    "StepUsage",
    "ToolEvaluationError",
    "ToolRegistrationError",
    "ToolValidationError",
    "UsageBudget",
    "UsageMeter",
    "budget",
    "estimate_tokens",
    "get_current_step_context",
    "get_current_usage_meter",
    "get_execution_context",
    "get_execution_ref",
    "get_implicit_references",
    "get_step_executor",
    "get_system_prompt_suffix_fragments",
    "get_user_prompt_suffix_fragments",
    "last_error",
    "load_ipython_extension",
    "map",
    "measuring_counter",
    "natural_function",
    "oversight",
    "resilience",
    "run",
    "scope",
    "session_usage",
    "set_default_step_executor",
    "to_jsonable_value",
    "tool",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: _Any) -> None:
    """`%load_ext nighthawk`: forwards to `nighthawk_ipython` (imported only now)."""
    # Imported here, not at the top, so that `import nighthawk` never imports IPython; `nighthawk_ipython`
    # imports the core modules it uses, never this package, so the two do not import each other.
    import nighthawk_ipython

    nighthawk_ipython.load_ipython_extension(ipython)


def unload_ipython_extension(ipython: _Any) -> None:
    """`%unload_ext nighthawk`."""
    import nighthawk_ipython  # here for the same reason as in `load_ipython_extension`

    nighthawk_ipython.unload_ipython_extension(ipython)


_SUBMODULES = frozenset({"oversight", "resilience"})
"""Public submodules listed in `__all__`, as nighthawk-python lists them; both load on first use."""


_STEP_NAMES: dict[str, str] = {
    "AgentStepExecutor": ".executor",
    "estimate_tokens": ".prompting._tokens",
    "measuring_counter": ".prompting._tokens",
    "tool": "._tool_registry",
}
"""Public names whose modules only a step (or a tool's registration) needs, imported on first use: the
executor and its prompt and media stack, the token counters and the tool registry stay out of `import
nighthawk` and of `%load_ext nighthawk` (tests/core/test_startup.py lists what stays out)."""


_BATCH_NAMES = frozenset({"map", "MapResult", "MapUsage"})
"""Public names of the batch layer, imported on first use: a program that never maps does not pay for it
(sqlite, hashing and the coroutine twins are a tenth of `import nighthawk`)."""


_AGENT_SETTINGS = frozenset({"ClaudeCodeCliModelSettings", "ClaudeCodeSdkModelSettings", "CodexModelSettings"})
"""The coding agents' settings classes, imported on first use: they are pydantic models."""


def __getattr__(name: str) -> _Any:
    import importlib

    if name in _STEP_NAMES:
        value = getattr(importlib.import_module(_STEP_NAMES[name], __name__), name)
        globals()[name] = value
        return value
    if name in _AGENT_SETTINGS:
        value = getattr(importlib.import_module(f"{__name__}.agents._settings"), name)
        globals()[name] = value
        return value
    if name in _BATCH_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.batch"), name)
        globals()[name] = value  # found directly from now on
        return value
    # `nh.ray.map_batches(...)` after a plain `import nighthawk as nh`: Ray is imported on this first use only.
    # `nh.resilience.vote(...)`, `nh.oversight.read_only()`, `nh.ray.map_batches(...)`: imported on first use,
    # not by `import nighthawk`. `nh.redaction.DEFAULT_MASK_NAME_PATTERNS`: the rules' public module, which
    # only names them again. `nh.events.listen(...)`: the event classes, which `import nighthawk` does not make.
    if name in ("events", "ray", "redaction", *_SUBMODULES):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    # The names loaded on first use (`__getattr__`) are listed too, as tab completion in a notebook expects.
    return sorted({*globals(), *__all__, "events", "redaction"})  # not `ray`: listing it must not import Ray
