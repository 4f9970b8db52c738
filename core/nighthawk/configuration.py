"""Executor configuration: model choice, prompt templates, context limits and rendering style.

These are plain frozen dataclasses so that `import nighthawk` stays cheap. They are checked when built (a patch
too), so a wrong value fails where it is written rather than in the middle of a step; a dict given for a
settings class is turned into that class, or refused when it has a key the class does not.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeAlias, TypeVar

from .agents import check_agent_model_settings, is_agent_model
from .budget import UsageBudget
from .prompting._limits import JSON_RENDERER_STYLES, JsonRendererStyle, StepContextLimits
from .prompting._templates import DEFAULT_SYSTEM_PROMPT_TEMPLATE, DEFAULT_USER_PROMPT_TEMPLATE
from .secrets import ContextRedaction

__all__ = [
    "DEFAULT_MAX_IDLE_ROUNDS",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MAX_REPEATED_CALLS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MODEL",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "DEFAULT_STEP_BUDGET",
    "JsonRendererStyle",
    "JsonableValue",
    "StepContextLimits",
    "StepExecutorConfiguration",
    "StepExecutorConfigurationPatch",
    "StepPromptTemplates",
    "to_jsonable_value",
]

DEFAULT_MODEL = "openai-responses:gpt-5.4-nano"

DEFAULT_STEP_BUDGET = UsageBudget(requests=50, wall_time_s=600.0)
"""Generous enough for any normal step; it stops a model that loops on its tools, or a step left hanging."""

DEFAULT_REQUEST_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 2

DEFAULT_MAX_REPEATED_CALLS = 3
"""Model responses in a row with the same tool call, the same arguments and the same result that end a step."""

DEFAULT_MAX_IDLE_ROUNDS = 5
"""Model responses in a row with no new assignment, tool result or outcome that end a step."""

DEFAULT_MAX_OUTPUT_TOKENS = 4_096
"""Output tokens one model response may use (`max_tokens`, sent with every request). A step's answers are tool
calls of a few hundred tokens at most; the cap stops a model that never ends its turn. `model_settings`
overrides it (`{"max_tokens": 16_000}` for a reasoning model that thinks at length)."""

JsonableValue: TypeAlias = "dict[str, JsonableValue] | list[JsonableValue] | str | int | float | bool | None"

CYCLE_MARK = "<cycle>"
"""Stands for a container met again inside itself."""
NONSERIALIZABLE_MARK = "<nonserializable>"
"""Stands for a value with no JSON form (bytes, an arbitrary object)."""


def to_jsonable_value(value: object) -> JsonableValue:
    """`value` as plain JSON data: pydantic models and dataclasses become dicts, mappings get string keys (in
    a stable order), sets, tuples and other sequences become lists. Never raises: a cycle becomes
    `"<cycle>"` and anything without a JSON form `"<nonserializable>"`."""
    return _jsonable(value, set())


def _jsonable(value: object, open_ids: set[int]) -> JsonableValue:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value  # type: ignore[return-value]
    if isinstance(value, (bytes, bytearray)):
        return NONSERIALIZABLE_MARK
    if id(value) in open_ids:
        return CYCLE_MARK
    open_ids.add(id(value))
    try:
        dump = getattr(value, "model_dump", None)
        if callable(dump) and not isinstance(value, type):  # a pydantic model, without importing pydantic
            return _jsonable(dump(mode="python"), open_ids)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return _jsonable({f.name: getattr(value, f.name) for f in fields(value)}, open_ids)
        if isinstance(value, Mapping):
            items = []
            for key, item in value.items():
                key_text = key if isinstance(key, str) else json.dumps(_jsonable(key, open_ids), ensure_ascii=False)
                items.append((key_text, item))
            return {key: _jsonable(item, open_ids) for key, item in sorted(items, key=lambda pair: pair[0])}
        if isinstance(value, (set, frozenset, Sequence)):
            return [_jsonable(item, open_ids) for item in list(value)]
        return NONSERIALIZABLE_MARK
    except Exception:  # a broken `__iter__`, `model_dump` or property: the value has no JSON form
        return NONSERIALIZABLE_MARK
    finally:
        open_ids.discard(id(value))


def check_model(model: object, parameter: str = "model") -> None:
    """Reject a `model` that is neither a `provider:model` string nor a pydantic-ai `Model`.

    Args:
        model: The value to check.
        parameter: How the value is named in the message (`fallback_models[0]`, ...).

    Raises:
        ValueError: A string without a provider, or with an empty part.
        TypeError: Anything else that is not a pydantic-ai `Model` (a number, `None`, a list, ...).
    """
    if isinstance(model, str):
        provider, sep, name = model.partition(":")
        if not (sep and provider.strip() and name.strip()):
            raise ValueError(
                f"`{parameter}` must be a `provider:model` string such as {DEFAULT_MODEL!r}, got {model!r}"
            )
        return
    # A `Model` instance exists only once pydantic-ai is imported, so nothing is imported to check it.
    models = sys.modules.get("pydantic_ai.models")
    if models is None or not isinstance(model, models.Model):
        raise TypeError(
            f"`{parameter}` must be a `provider:model` string such as {DEFAULT_MODEL!r} or a pydantic-ai `Model` "
            f"instance, got {type(model).__name__} {model!r:.80}"
        )


@dataclass(frozen=True, kw_only=True)
class StepPromptTemplates:
    """The two prompt templates a step is rendered with."""

    step_system_prompt_template: str = DEFAULT_SYSTEM_PROMPT_TEMPLATE
    """System prompt: the step protocol (tools, outcomes). It is sent as it is, the same for every step."""

    step_user_prompt_template: str = DEFAULT_USER_PROMPT_TEMPLATE
    """User prompt with the three delimited sections; `$program`, `$locals` and `$globals` are filled in."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, str):
                raise TypeError(f"`StepPromptTemplates.{f.name}` must be a string, got {value!r:.80}")


def check_request_setting(name: str, value: object) -> None:
    """Refuse a `request_timeout_s` that is not a positive number, a `max_retries` that is not a whole
    number of at least 0, or a `max_repeated_calls` or `max_idle_rounds` that is not a whole number of at
    least 1 (`None` is allowed for all: the provider's own setting, or no bound).

    Raises:
        ValueError: The value, with what the setting accepts.
    """
    if value is None:
        return
    if name in ("max_repeated_calls", "max_idle_rounds"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"`{name}` must be a whole number of at least 1 or None, got {value!r}")
    elif name == "request_timeout_s":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
            raise ValueError(f"`request_timeout_s` must be a positive number of seconds or None, got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`max_retries` must be a whole number of at least 0 or None, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class StepExecutorConfiguration:
    """Everything that decides how a step executor talks to its model."""

    model: Any = DEFAULT_MODEL
    """A `provider:model` string (for example `openai-responses:gpt-5.4-nano`) or a pydantic-ai `Model`;
    anything else is refused when the configuration is built."""

    model_settings: Mapping[str, Any] | None = None
    """Settings forwarded to every model request (a dict; a pydantic model is turned into one). They win over
    the defaults nighthawk sends: `max_tokens` (`DEFAULT_MAX_OUTPUT_TOKENS`), the timeout and the retries."""

    tokenizer_encoding: str | None = None
    """tiktoken encoding for exact counts in reports; `None` picks it from the model name, then `o200k_base`,
    and `"estimate"` skips tiktoken. An unknown name is refused when the configuration is built. Prompt budgets
    never use it: they are always estimated, so prompts are the same on every machine."""

    strict_tokenizer: bool = False
    """Raise instead of estimating when an exact count is asked for and the vocabulary cannot be loaded."""

    prompts: StepPromptTemplates = field(default_factory=StepPromptTemplates)
    """Prompt templates (a dict of `StepPromptTemplates` fields is turned into one)."""

    context_limits: StepContextLimits = field(default_factory=StepContextLimits)
    """Bounds on rendered context (a dict of `StepContextLimits` fields is turned into one)."""

    json_renderer_style: JsonRendererStyle = "default"
    """How values are rendered in prompts and tool results: `strict`, `default` or `detailed`."""

    context_redaction: ContextRedaction = field(default_factory=ContextRedaction)
    """Which names and values are masked before anything reaches the model, a log or a display (a dict of
    `ContextRedaction` fields is turned into one)."""

    system_prompt_suffix_fragments: tuple[str, ...] = ()
    """Texts appended to the system prompt (a tuple of strings: a lone string is refused)."""

    user_prompt_suffix_fragments: tuple[str, ...] = ()
    """Texts appended to the user prompt (a tuple of strings: a lone string is refused)."""

    step_budget: UsageBudget = DEFAULT_STEP_BUDGET
    """What one step may spend (requests, tokens, cost, wall time); `UsageBudget()` removes every bound (a dict
    of `UsageBudget` fields is turned into one)."""

    request_timeout_s: float | None = DEFAULT_REQUEST_TIMEOUT_S
    """Seconds one model request may take, its retries included; `None` leaves the provider's own timeout."""

    max_retries: int | None = DEFAULT_MAX_RETRIES
    """Retries of a request that failed with 429 or 5xx; the provider client backs off between them and
    honours the server's `Retry-After`. `None` leaves the client's own setting."""

    max_repeated_calls: int | None = DEFAULT_MAX_REPEATED_CALLS
    """A step ends with `ExecutionError` when the model sends the same tool call with the same arguments, and
    gets the same result, in this many responses in a row (several identical calls in one response count
    once); `None` never stops it. Checked before each request, so the stopped loop costs no further request."""

    max_idle_rounds: int | None = DEFAULT_MAX_IDLE_ROUNDS
    """A step ends with `ExecutionError` after this many model responses in a row that bring no new
    assignment, tool result or outcome (plain-text answers included); `None` never stops it."""

    fallback_models: tuple[Any, ...] = ()
    """Models tried in order when a request to `model` fails (pydantic-ai `FallbackModel`), each checked like
    `model`. A lone string is refused, not read as one model: `"a,b"` would then pass as one odd model name and
    fail only at the first request."""

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _FIELD_CHECKS[f.name](f.name, getattr(self, f.name)))
        if is_agent_model(self.model):  # a coding agent's settings are its settings class's fields
            check_agent_model_settings(self.model, self.model_settings)

    def request_settings(self) -> dict[str, Any]:
        """Model settings for every request: the output cap, the timeout and retries, then `model_settings`
        (which win)."""
        settings: dict[str, Any] = {"max_tokens": DEFAULT_MAX_OUTPUT_TOKENS}
        if self.request_timeout_s is not None:
            settings["request_timeout"] = float(self.request_timeout_s)
        if self.max_retries is not None:
            settings["max_retries"] = self.max_retries
        settings.update(self.model_settings or {})
        return settings

    @property
    def model_name(self) -> str:
        """The model part of the configured model, used to pick a tokenizer."""
        if isinstance(self.model, str):
            return self.model.split(":", 1)[1]
        return str(getattr(self.model, "model_name", ""))

    def apply(self, patch: StepExecutorConfigurationPatch) -> StepExecutorConfiguration:
        """Return a copy with every field the patch sets replaced."""
        changes = {f.name: getattr(patch, f.name) for f in fields(patch) if getattr(patch, f.name) is not None}
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class StepExecutorConfigurationPatch:
    """A partial configuration: fields left at `None` keep the value they patch.

    Every field set is checked (and a dict converted) as in `StepExecutorConfiguration`, when the patch is built.
    """

    model: Any = None
    model_settings: Mapping[str, Any] | None = None
    tokenizer_encoding: str | None = None
    strict_tokenizer: bool | None = None
    prompts: StepPromptTemplates | None = None
    context_limits: StepContextLimits | None = None
    json_renderer_style: JsonRendererStyle | None = None
    context_redaction: ContextRedaction | None = None
    system_prompt_suffix_fragments: tuple[str, ...] | None = None
    user_prompt_suffix_fragments: tuple[str, ...] | None = None
    step_budget: UsageBudget | None = None
    request_timeout_s: float | None = None
    max_retries: int | None = None
    max_repeated_calls: int | None = None
    max_idle_rounds: int | None = None
    fallback_models: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                object.__setattr__(self, f.name, _FIELD_CHECKS[f.name](f.name, value))


# --- checks run when a configuration or a patch is built ------------------------------------------------

S = TypeVar("S")


def _settings_object(cls: type[S]) -> Callable[[str, object], S]:
    """A check that takes a `cls` as it is, or builds one from a dict of its fields."""

    def check(parameter: str, value: object) -> S:
        if isinstance(value, cls):
            return value
        known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        if not isinstance(value, Mapping):
            raise TypeError(
                f"`{parameter}` must be a `nighthawk.{cls.__name__}` or a dict of its fields ({', '.join(known)}), "
                f"got {value!r:.80}"
            )
        unknown = [key for key in value if key not in known]
        if unknown:
            raise ValueError(
                f"`{parameter}` has no setting {unknown[0]!r}; the settings of `{cls.__name__}` are {', '.join(known)}"
            )
        return cls(**value)

    return check


def _model_settings(parameter: str, value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    if hasattr(value, "model_dump"):  # a pydantic model of settings
        value = value.model_dump(exclude_none=True)
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise TypeError(
            f"`{parameter}` must be a dict of model settings such as {{'temperature': 0}}, got {value!r:.80}"
        )
    return dict(value)


def _tokenizer_encoding(parameter: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"`{parameter}` must be a tiktoken encoding name such as 'o200k_base' or None, got {value!r}")
    from .prompting._tokens import unknown_encoding  # logging and the counters: only when an encoding is configured

    problem = unknown_encoding(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _flag(parameter: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"`{parameter}` must be True or False, got {value!r:.80}")
    return value


def _renderer_style(parameter: str, value: object) -> JsonRendererStyle:
    if value not in JSON_RENDERER_STYLES:
        raise ValueError(f"`{parameter}` must be one of {JSON_RENDERER_STYLES}, got {value!r:.80}")
    return value  # type: ignore[return-value]


def _sequence(parameter: str, value: object, example: str) -> tuple[Any, ...]:
    """`value` as a tuple; a lone string is refused rather than read as a sequence of its characters."""
    if isinstance(value, str):
        raise TypeError(
            f"`{parameter}` must be a tuple, got the single string {value!r:.80}; write `{parameter}=({value!r:.80},)`"
        )
    try:
        return tuple(value)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"`{parameter}` must be a tuple such as {example}, got {value!r:.80}") from None


def _fragments(parameter: str, value: object) -> tuple[str, ...]:
    fragments = _sequence(parameter, value, "('Answer in French.',)")
    for index, fragment in enumerate(fragments):
        if not isinstance(fragment, str):
            raise TypeError(f"`{parameter}[{index}]` must be a string, got {fragment!r:.80}")
    return fragments


def _fallback_models(parameter: str, value: object) -> tuple[Any, ...]:
    models = _sequence(parameter, value, f"({DEFAULT_MODEL!r},)")
    for index, model in enumerate(models):
        check_model(model, f"{parameter}[{index}]")
    return models


def _model(parameter: str, value: object) -> object:
    check_model(value, parameter)
    return value


def _request_setting(parameter: str, value: object) -> object:
    check_request_setting(parameter, value)
    return value


_FIELD_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "model": _model,
    "model_settings": _model_settings,
    "tokenizer_encoding": _tokenizer_encoding,
    "strict_tokenizer": _flag,
    "prompts": _settings_object(StepPromptTemplates),
    "context_limits": _settings_object(StepContextLimits),
    "json_renderer_style": _renderer_style,
    "context_redaction": _settings_object(ContextRedaction),
    "system_prompt_suffix_fragments": _fragments,
    "user_prompt_suffix_fragments": _fragments,
    "step_budget": _settings_object(UsageBudget),
    "request_timeout_s": _request_setting,
    "max_retries": _request_setting,
    "max_repeated_calls": _request_setting,
    "max_idle_rounds": _request_setting,
    "fallback_models": _fallback_models,
}
"""How each field of a configuration (or a patch) is checked and, where a dict is given, converted."""
