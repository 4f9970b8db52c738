"""Kernel-wide settings: which model runs steps, how steps are displayed, and the context limits.

`NighthawkSettings` is a traitlets `Configurable` registered with the shell, so the same values can be
set three ways: `%nighthawk model ...`, `%config NighthawkSettings.model = '...'`, or from Python with
`nighthawk_ipython.configure(...)`. Only traitlets is imported here; the core is imported the first time an
executor is actually needed, which keeps `%load_ext` cheap: each import of a core module sits in the
function that needs it.
"""

from __future__ import annotations

import sys
from typing import Any

from traitlets import Any as AnyTrait
from traitlets import Bool, Dict, Enum, TraitError, Unicode, observe, validate
from traitlets.config import Configurable

__all__ = [
    "BUDGET_FIGURES",
    "BUDGET_KEYS",
    "DISPLAY_MODES",
    "LIMIT_KEYS",
    "NighthawkSettings",
    "model_problem",
    "settings_for",
]

DISPLAY_MODES: tuple[str, ...] = ("widget", "html", "text", "none")
"""How a step is shown: a live widget (with static fallbacks), static HTML, plain text, or not at all."""

LIMIT_KEYS: tuple[str, ...] = (
    "locals_max_tokens",
    "locals_max_items",
    "globals_max_tokens",
    "globals_max_items",
    "value_max_tokens",
    "tool_result_max_tokens",
    "media_max_items",
    "media_max_bytes",
    "object_max_methods",
)
"""Fields of `nighthawk.StepContextLimits` that `%nighthawk limits` accepts (checked by a test)."""

REQUEST_KEYS: tuple[str, ...] = ("request_timeout_s", "max_retries", "max_repeated_calls", "max_idle_rounds")
"""Fields of `nighthawk.StepExecutorConfiguration` that `%nighthawk limits` sets by name."""
BUDGET_FIGURES: tuple[str, ...] = ("requests", "total_tokens", "cost_usd", "wall_time_s")
"""The fields of `nighthawk.UsageBudget`, bounded per step, per cell or by `%%natural --budget`."""
BUDGET_KEYS: tuple[str, ...] = (
    *(f"step.{figure}" for figure in BUDGET_FIGURES),
    *(f"cell.{figure}" for figure in BUDGET_FIGURES),
    *REQUEST_KEYS,
)
"""What `%nighthawk limits` also accepts: bounds of one step and of one cell (fields of
`nighthawk.UsageBudget`), then `REQUEST_KEYS`: the request timeout, the retries, and how much a model may
repeat itself; a value `None` lifts the bound."""


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

    budgets = Dict(
        help="Budgets and request settings by key ('step.requests', 'cell.cost_usd', 'request_timeout_s', "
        "'max_retries', ...); a key left out keeps Nighthawk's default, `None` lifts the bound.",
    ).tag(config=True)

    confirm = Bool(
        False,
        help="Ask before every tool call of every step (`%nighthawk confirm on`): the cell shows the call and "
        "waits for `y` on the kernel's input prompt; no answer refuses it.",
    ).tag(config=True)

    isolated = Bool(
        False,
        help="Run the model's code of every step in a child process walled by the operating system "
        "(`%nighthawk isolated on`, Linux only): in-place changes stay there, write bindings come back.",
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
        limits = _only_known(proposal["value"], LIMIT_KEYS, "context limit")
        for key, value in limits.items():
            least = 0 if key == "object_max_methods" else 1  # 0: list no methods
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise TraitError(f"context limit `{key}` must be an int of at least {least}, got {value!r}")
        return limits

    @validate("budgets")
    def _check_budgets(self, proposal: Any) -> dict[str, Any]:
        budgets = _only_known(proposal["value"], BUDGET_KEYS, "budget key")
        try:  # the core's own checks, so the kernel accepts exactly what the configuration does
            self._configuration_values(budgets)
            _cell_budget(budgets)
        except (TypeError, ValueError) as exc:
            raise TraitError(str(exc)) from exc
        return budgets

    @observe("model", "limits", "budgets", "model_object")
    def _forget_executor(self, change: Any) -> None:
        if change["name"] == "model" and change["new"]:
            self.model_object = None
        self._executor = None
        if "nighthawk" in sys.modules:  # already paid for: install at once so natural functions see it
            self.install()

    @observe("confirm")
    def _use_confirm(self, change: Any) -> None:
        from ._confirm import use_confirm  # imports the core: only once confirm mode is turned on or off

        use_confirm(change["new"])

    @observe("isolated")
    def _use_isolated(self, change: Any) -> None:
        from ._isolated import use_isolated  # imports the core: only once isolation is turned on or off

        use_isolated(change["new"])

    # --- the executor ------------------------------------------------------------------------------

    def use_model(self, value: object, *, source: str = "") -> None:
        """Use `value`: a `provider:model` string, a pydantic-ai `Model`, or a `StepExecutor`.

        Raises:
            TraitError: A string that is not `provider:model`, or a value of any other kind.
        """
        problem = model_problem(value)
        if problem is not None:
            raise TraitError(problem)
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
        # The core, only now that an executor is needed (module docstring).
        from nighthawk.configuration import DEFAULT_MODEL, StepContextLimits, StepExecutorConfiguration
        from nighthawk.model.executor import AgentStepExecutor

        overrides = self._configuration_values(self.budgets)
        if self.limits:
            overrides["context_limits"] = StepContextLimits(**self.limits)
        if model is not None and not isinstance(model, str) and callable(getattr(model, "run_step", None)):
            if overrides and hasattr(model, "with_configuration") and hasattr(model, "configuration"):
                from dataclasses import replace

                return model.with_configuration(replace(model.configuration, **overrides))
            return model
        configuration = StepExecutorConfiguration(model=model if model is not None else DEFAULT_MODEL, **overrides)
        return AgentStepExecutor.from_configuration(configuration=configuration)

    @staticmethod
    def _configuration_values(budgets: dict[str, Any]) -> dict[str, Any]:
        """`StepExecutorConfiguration` fields the budget keys set (the step budget over the default one).

        Raises:
            ValueError: A value the configuration refuses.
        """
        from dataclasses import replace

        # The core's own checks, imported when budgets are first set rather than at `%load_ext`.
        from nighthawk.configuration import DEFAULT_STEP_BUDGET, check_request_setting

        values: dict[str, Any] = {}
        step = {key.partition(".")[2]: value for key, value in budgets.items() if key.startswith("step.")}
        if step:
            values["step_budget"] = replace(DEFAULT_STEP_BUDGET, **step)
        for key in REQUEST_KEYS:
            if key in budgets:
                check_request_setting(key, budgets[key])  # the configuration's own rule, before anything is kept
                values[key] = budgets[key]
        return values

    def cell_budget(self) -> Any:
        """The `nighthawk.UsageBudget` every cell gets, or `None` when cells are not bounded."""
        return _cell_budget(self.budgets)

    def install(self) -> None:
        """Make these settings' executor the kernel-wide default (`nighthawk.set_default_step_executor`)."""
        from nighthawk.road.runtime import set_default_step_executor  # the core, only once an executor is installed

        executor = self.executor()
        set_default_step_executor(executor)
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
        from nighthawk.road.runtime import set_default_step_executor  # imported already (checked above)

        if _default_executor() is self._installed:
            set_default_step_executor(None)
        self._installed = None

    # --- surviving %reload_ext and %unload_ext -----------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The values a later load of the extension in the same shell starts from."""
        return {name: getattr(self, name) for name in _KEPT}

    def restore(self, values: dict[str, Any]) -> None:
        """Take back the values of `snapshot` (the string model first: setting it clears `model_object`)."""
        for name in _KEPT:
            if name in values:
                setattr(self, name, values[name])

    def describe(self) -> str:
        """Readable settings for `%nighthawk status`: the first three lines are model, display and limits."""
        from nighthawk.configuration import DEFAULT_MODEL  # the core, only once the status is asked for

        if self.model_object is not None:
            model = _describe_object(self.model_object, self.model_source)
        else:
            model = self.model or f"{DEFAULT_MODEL} (default)"
        limits = ", ".join(f"{key}={value}" for key, value in sorted(self.limits.items())) or "(defaults)"
        lines = [f"model:   {model}", f"display: {self.display}", f"limits:  {limits}"]
        current = _default_executor()
        lines.extend(self._spending(current))
        if current is not None and current is not self._installed:
            lines.append(f"in use:  {_describe_object(current, '')} (set with nighthawk.set_default_step_executor)")
        # Where requests go is read from the executor in force, whoever installed it.
        target = getattr(getattr(current, "configuration", None), "model", None)
        if target is None:
            target = current if current is not None else (self.model_object or self.model or DEFAULT_MODEL)
        lines.extend(_destination(target))
        if self.confirm:  # only when on: a notebook's saved status output stays as it was
            lines.append("confirm: on (every tool call waits for your answer)")
        if self.isolated:
            lines.append("isolated: on (the model's code runs in a walled child process)")
        lines.extend(_scope_lines())
        return "\n".join(lines)

    def _spending(self, executor: Any) -> list[str]:
        """Budget and request lines for `status`, read from the configuration of the executor in force."""
        configuration = getattr(executor, "configuration", None)
        cell = self.cell_budget()
        cell_text = "unbounded" if cell is None else cell.describe()
        if configuration is None or not hasattr(configuration, "step_budget"):
            return [f"budget:  step set by {type(executor).__name__} · cell {cell_text}"]
        timeout = configuration.request_timeout_s
        fallback = ", ".join(_model_name(model) for model in configuration.fallback_models) or "none"
        return [
            f"budget:  step {configuration.step_budget.describe()} · cell {cell_text}",
            f"requests: timeout {'provider default' if timeout is None else f'{timeout:g} s'} · retries "
            f"{'provider default' if configuration.max_retries is None else configuration.max_retries} · "
            f"fallback {fallback}",
        ]


_KEPT = ("model", "model_object", "model_source", "display", "limits", "budgets", "confirm", "isolated")
"""Settings carried from one load of the extension to the next in the same shell."""


def _only_known(values: dict[str, Any], keys: tuple[str, ...], what: str) -> dict[str, Any]:
    unknown = sorted(set(values) - set(keys))
    if unknown:
        raise TraitError(f"unknown {what}(s) {unknown}; choose from {list(keys)}")
    return dict(values)


def _cell_budget(budgets: dict[str, Any]) -> Any:
    """The `UsageBudget` of the `cell.*` keys (`None` when none bounds anything).

    Raises:
        ValueError: A value `UsageBudget` refuses.
    """
    cell = {key.partition(".")[2]: value for key, value in budgets.items() if key.startswith("cell.")}
    if not any(value is not None for value in cell.values()):
        return None
    from nighthawk.budget import UsageBudget  # the core, only once a cell budget is set

    return UsageBudget(**cell)


def _model_name(model: object) -> str:
    return model if isinstance(model, str) else str(getattr(model, "model_name", None) or type(model).__name__)


def model_problem(value: object) -> str | None:
    """Why `value` cannot be the kernel's model, or `None` when it can (a `provider:model` string, a
    pydantic-ai `Model` or a step executor)."""
    if isinstance(value, str):
        provider, sep, name = value.partition(":")
        if sep and provider.strip() and name.strip():
            return None
        return f"{value!r} is not a `provider:model` string such as 'openai-responses:gpt-5.4-nano'"
    if callable(getattr(value, "run_step", None)):
        return None
    models = sys.modules.get("pydantic_ai.models")
    if models is not None and isinstance(value, models.Model):
        return None
    return (
        f"a value of type {type(value).__name__}, which is not a model; give a `provider:model` string, a "
        "pydantic-ai Model (for example FunctionModel) or a StepExecutor"
    )


def _destination(model: object) -> list[str]:
    """Where requests go: provider, base URL and replay mode (for `%nighthawk status`)."""
    replay = "off"
    if type(model).__name__ == "ReplayModel":
        store = getattr(getattr(model, "store", None), "path", None)
        mode = str(getattr(model, "mode", "?"))
        replay = f"{mode} ({store})" if store else mode
        model = getattr(model, "_spec", None)
        if mode == "replay" or model is None:  # answers come from the store alone
            return ["provider: none (every answer comes from the replay store; nothing is sent)", f"replay:  {replay}"]
    if isinstance(model, str):
        provider = model.partition(":")[0]
        base_url = _string_base_url(provider)
    else:
        provider = str(getattr(model, "system", None) or type(model).__name__)
        try:
            base_url = getattr(model, "base_url", None)
        except Exception:  # noqa: BLE001 - a third-party property, only for the status text
            base_url = None
        if base_url is None and provider in ("function", "test"):
            base_url = "none (scripted in this kernel: nothing is sent anywhere)"
    return [f"provider: {provider}", f"base URL: {base_url or '(the provider default)'}", f"replay:  {replay}"]


def _string_base_url(provider: str) -> str | None:
    """The base URL a `provider:model` string would use, read from the environment like the provider does."""
    import os

    if provider.startswith("openai"):
        return os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    if provider == "anthropic":
        return os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
    return None


def _describe_object(value: object, source: str) -> str:
    """A one-line description of a model or executor object (reprs of models can be pages long)."""
    label = getattr(value, "model_label", None) or getattr(value, "model_name", None)
    kind = type(value).__name__
    described = f"{kind} {label}" if label else kind
    return f"{source} ({described})" if source else described


def _scope_lines() -> list[str]:
    """What the `nighthawk.scope(...)` in force adds to every step (nothing outside one, or when it adds
    nothing: a notebook's saved status output stays as it was)."""
    # The core, only once the status is asked for.
    from nighthawk.errors import NighthawkError
    from nighthawk.road.runtime import (
        get_implicit_references,
        get_system_prompt_suffix_fragments,
        get_user_prompt_suffix_fragments,
    )

    try:
        references = get_implicit_references()
        system, user = get_system_prompt_suffix_fragments(), get_user_prompt_suffix_fragments()
    except NighthawkError:
        return []
    lines = []
    if references:
        lines.append("scope:   implicit references " + ", ".join(sorted(references)))
    for prompt, fragments in (("system", system), ("user", user)):
        if fragments:
            lines.append(f"scope:   {prompt} prompt + " + " | ".join(repr(fragment[:60]) for fragment in fragments))
    return lines


def _default_executor() -> Any:
    """The executor steps would use now, or `None` when none is set."""
    # The core, only once the executor in force is asked about (installing or the status).
    from nighthawk.errors import NighthawkError
    from nighthawk.road.runtime import get_step_executor

    try:
        return get_step_executor()
    except NighthawkError:
        return None


def settings_for(shell: Any) -> NighthawkSettings:
    """The settings of `shell`, from its `%config NighthawkSettings.<name>` values.

    A value set with `%config` before the extension loaded is only checked now. A bad one would fail this and
    every later load (each magic, each cell) with a traitlets traceback, so it is dropped from the shell's
    configuration with one line saying why, and the setting keeps its default.
    """
    section = shell.config.get("NighthawkSettings") if "NighthawkSettings" in shell.config else None
    if section:
        probe = NighthawkSettings()
        for name in [name for name in section if probe.has_trait(name)]:
            try:
                setattr(probe, name, section[name])
            except TraitError as error:
                print(
                    f"Nighthawk ignored `%config NighthawkSettings.{name} = {section.pop(name)!r}`: {error}",
                    file=sys.stderr,
                )
    return NighthawkSettings(parent=shell)
