"""Kernel-wide settings: which model runs steps, how steps are displayed, and the context limits.

`NighthawkSettings` is a traitlets `Configurable` registered with the shell, so the same values can be
set three ways: `%nighthawk model ...`, `%config NighthawkSettings.model = '...'`, or from Python with
`nighthawk_ipython.configure(...)`. Only traitlets is imported here; the core is imported the first time an
executor is actually needed, which keeps `%load_ext` cheap.
"""

from __future__ import annotations

import sys
from typing import Any

from traitlets import Any as AnyTrait
from traitlets import Dict, Enum, TraitError, Unicode, observe, validate
from traitlets.config import Configurable

__all__ = ["DISPLAY_MODES", "LIMIT_KEYS", "NighthawkSettings"]

DISPLAY_MODES: tuple[str, ...] = ("widget", "html", "text", "none")
"""How a step is shown: a live widget (with static fallbacks), static HTML, plain text, or not at all."""

LIMIT_KEYS: tuple[str, ...] = (
    "locals_max_tokens",
    "locals_max_items",
    "globals_max_tokens",
    "globals_max_items",
    "value_max_tokens",
    "tool_result_max_tokens",
)
"""Fields of `nighthawk.StepContextLimits` that `%nighthawk limits` accepts (checked by a test)."""


class NighthawkSettings(Configurable):
    """Settings of the Nighthawk kernel extension (`%config NighthawkSettings.<name> = ...`)."""

    model = Unicode(
        "",
        help="The model as a `provider:model` string such as 'openai-responses:gpt-5.4-nano'; empty means "
        "Nighthawk's default model. `%nighthawk model VARIABLE` uses a pydantic-ai Model or a StepExecutor "
        "held by a notebook variable instead.",
    ).tag(config=True)

    display = Enum(
        DISPLAY_MODES,
        default_value="widget",
        help="How steps are displayed: 'widget' (live widget plus static HTML and text), 'html', 'text' or 'none'.",
    ).tag(config=True)

    limits = Dict(
        help="Context limits (fields of nighthawk.StepContextLimits), for example {'value_max_tokens': 100}.",
    ).tag(config=True)

    model_object = AnyTrait(
        None,
        allow_none=True,
        help="A pydantic-ai Model or a StepExecutor object; takes precedence over `model` while set.",
    )

    model_source = Unicode("", help="How `model_object` was given (the variable name), for `status`.")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._executor: Any = None
        # Whether the executor we built is the one `nighthawk.set_default_step_executor` holds. A change of
        # settings drops it; the next step (or the next cell) installs the new one.
        self._installed: Any = None

    # --- validation --------------------------------------------------------------------------------

    @validate("model")
    def _check_model(self, proposal: Any) -> str:
        value = str(proposal["value"]).strip()
        if value and ":" not in value:
            raise TraitError(
                f"`NighthawkSettings.model` must be a `provider:model` string such as "
                f"'openai-responses:gpt-5.4-nano', got {value!r}"
            )
        return value

    @validate("limits")
    def _check_limits(self, proposal: Any) -> dict[str, int]:
        limits = dict(proposal["value"])
        unknown = sorted(set(limits) - set(LIMIT_KEYS))
        if unknown:
            raise TraitError(f"unknown context limit(s) {unknown}; choose from {list(LIMIT_KEYS)}")
        for key, value in limits.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise TraitError(f"context limit `{key}` must be a positive int, got {value!r}")
        return limits

    @observe("model", "limits", "model_object")
    def _forget_executor(self, change: Any) -> None:
        if change["name"] == "model" and change["new"]:
            self.model_object = None
        self._executor = None
        if "nighthawk" in sys.modules:  # already paid for: install at once so natural functions see it
            self.install()

    # --- the executor ------------------------------------------------------------------------------

    def use_model(self, value: object, *, source: str = "") -> None:
        """Use `value`: a `provider:model` string, a pydantic-ai `Model`, or a `StepExecutor`.

        Raises:
            TraitError: A string that is not `provider:model`.
        """
        if isinstance(value, str):
            self.model = value
            self.model_object = None
            self.model_source = ""
        else:
            self.model_source = source
            self.model_object = value

    def executor(self) -> Any:
        """The step executor these settings describe (built once per change of settings)."""
        if self._executor is None:
            self._executor = self.build_executor(self.model_object if self.model_object is not None else self.model or None)
        return self._executor

    def build_executor(self, model: object) -> Any:
        """Build an executor for `model` (a string, a pydantic-ai Model, a StepExecutor, or `None` for the default).

        A `StepExecutor` is used as it is; when it carries a configuration, the context limits are applied to
        it. Anything else becomes the model of an `AgentStepExecutor`.
        """
        import nighthawk
        from nighthawk.configuration import DEFAULT_MODEL

        limits = nighthawk.StepContextLimits(**self.limits) if self.limits else None
        if model is not None and not isinstance(model, str) and callable(getattr(model, "run_step", None)):
            if limits is not None and hasattr(model, "with_configuration") and hasattr(model, "configuration"):
                from dataclasses import replace

                return model.with_configuration(replace(model.configuration, context_limits=limits))
            return model
        configuration = nighthawk.StepExecutorConfiguration(
            model=model if model is not None else DEFAULT_MODEL,
            **({"context_limits": limits} if limits is not None else {}),
        )
        return nighthawk.AgentStepExecutor.from_configuration(configuration=configuration)

    def install(self) -> None:
        """Make these settings' executor the kernel-wide default (`nighthawk.set_default_step_executor`)."""
        import nighthawk

        executor = self.executor()
        nighthawk.set_default_step_executor(executor)
        self._installed = executor

    def ensure_installed(self) -> None:
        """Install the executor when no default executor is in force, or ours is out of date.

        A user who called `nighthawk.set_default_step_executor(...)` after the last change of settings keeps
        that executor: settings only replace it when they change.
        """
        current = _default_executor()
        if current is None or (current is self._installed and self._executor is not current):
            self.install()

    def uninstall(self) -> None:
        """Clear the kernel-wide default executor if it is still ours."""
        if self._installed is None or "nighthawk" not in sys.modules:
            return
        import nighthawk

        if _default_executor() is self._installed:
            nighthawk.set_default_step_executor(None)
        self._installed = None

    def describe(self) -> str:
        """Readable settings for `%nighthawk status`."""
        from nighthawk.configuration import DEFAULT_MODEL

        if self.model_object is not None:
            model = _describe_object(self.model_object, self.model_source)
        else:
            model = self.model or f"{DEFAULT_MODEL} (default)"
        limits = ", ".join(f"{key}={value}" for key, value in sorted(self.limits.items())) or "(defaults)"
        lines = [f"model:   {model}", f"display: {self.display}", f"limits:  {limits}"]
        current = _default_executor()
        if current is not None and current is not self._installed:
            lines.append(f"in use:  {_describe_object(current, '')} (set with nighthawk.set_default_step_executor)")
        return "\n".join(lines)


def _describe_object(value: object, source: str) -> str:
    """A one-line description of a model or executor object (reprs of models can be pages long)."""
    label = getattr(value, "model_label", None) or getattr(value, "model_name", None)
    kind = type(value).__name__
    described = f"{kind} {label}" if label else kind
    return f"{source} ({described})" if source else described


def _default_executor() -> Any:
    """The executor steps would use now, or `None` when none is set."""
    import nighthawk

    try:
        return nighthawk.get_step_executor()
    except nighthawk.NighthawkError:
        return None
