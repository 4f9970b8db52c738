"""Nighthawk: Python controls the flow, an LLM executes small Natural blocks against live Python state.

`import nighthawk` imports neither IPython nor pydantic-ai, nor Ray (`nighthawk.ray` is imported when first
used), and of its own modules only the budgets: every other public name is imported on first use (PEP 562,
`__getattr__` below), so that `%load_ext nighthawk`, which imports this package, stays cheap;
`%load_ext nighthawk` forwards to `nighthawk_ipython`.
"""

from __future__ import annotations

from typing import Any as _Any

# Eager: the module `nighthawk.budget` would otherwise, once any code imports it, shadow the function `budget`
# (the import system sets a loaded submodule as an attribute of its package).
from .budget import StepUsage, UsageBudget, budget, session_usage

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


_FACE_NAMES: dict[str, str] = {
    "JsonableValue": ".configuration",
    "StepContextLimits": ".configuration",
    "StepExecutorConfiguration": ".configuration",
    "StepExecutorConfigurationPatch": ".configuration",
    "StepPromptTemplates": ".configuration",
    "to_jsonable_value": ".configuration",
    "natural_function": ".road.decorator",
    "BudgetExceededError": ".errors",
    "ExecutionError": ".errors",
    "MapItemError": ".errors",
    "MapStoppedError": ".errors",
    "ModelConfigurationError": ".errors",
    "NaturalParseError": ".errors",
    "NighthawkError": ".errors",
    "OperationRefusedError": ".errors",
    "OversightRejectedError": ".errors",
    "StepAbortedError": ".errors",
    "ToolEvaluationError": ".errors",
    "ToolRegistrationError": ".errors",
    "ToolValidationError": ".errors",
    "last_error": ".errors",
    "ExecutionContext": ".road.runtime",
    "ExecutionRef": ".road.runtime",
    "StepExecutor": ".road.runtime",
    "UsageMeter": ".road.runtime",
    "get_current_usage_meter": ".road.runtime",
    "get_execution_context": ".road.runtime",
    "get_execution_ref": ".road.runtime",
    "get_implicit_references": ".road.runtime",
    "get_step_executor": ".road.runtime",
    "get_system_prompt_suffix_fragments": ".road.runtime",
    "get_user_prompt_suffix_fragments": ".road.runtime",
    "run": ".road.runtime",
    "scope": ".road.runtime",
    "set_default_step_executor": ".road.runtime",
    "ContextRedaction": ".secrets",
    "StepContext": ".step._context",
    "get_current_step_context": ".step._context",
}
"""The other public names and their modules, imported on first use: `import nighthawk` (and so `%load_ext
nighthawk`, which imports this package) loads almost nothing; `nighthawk.natural_function` loads the parser,
`nighthawk.run` the runtime."""


_STEP_NAMES: dict[str, str] = {
    "AgentStepExecutor": ".model.executor",
    "estimate_tokens": ".prompting._tokens",
    "measuring_counter": ".prompting._tokens",
    "tool": ".step._tool_registry",
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

    if name in _FACE_NAMES or name in _STEP_NAMES:
        value = getattr(importlib.import_module(_FACE_NAMES.get(name) or _STEP_NAMES[name], __name__), name)
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
    # Any other submodule (`nighthawk.road.runtime` after a plain `import nighthawk`), which the face no longer loads.
    if not name.startswith("__"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    # The names loaded on first use (`__getattr__`) are listed too, as tab completion in a notebook expects.
    return sorted({*globals(), *__all__, "events", "redaction"})  # not `ray`: listing it must not import Ray
