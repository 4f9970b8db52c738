"""Executor configuration: model choice, prompt templates, context limits and rendering style.

These are plain frozen dataclasses so that `import nighthawk` stays cheap; they are validated when built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypeAlias

from ._prompts import DEFAULT_SYSTEM_PROMPT_TEMPLATE, DEFAULT_USER_PROMPT_TEMPLATE
from .redaction import ContextRedaction

__all__ = [
    "DEFAULT_MODEL",
    "JsonRendererStyle",
    "JsonableValue",
    "StepContextLimits",
    "StepExecutorConfiguration",
    "StepExecutorConfigurationPatch",
    "StepPromptTemplates",
]

DEFAULT_MODEL = "openai-responses:gpt-5.4-nano"

JsonRendererStyle: TypeAlias = Literal["strict", "default", "detailed"]
JSON_RENDERER_STYLES: tuple[JsonRendererStyle, ...] = ("strict", "default", "detailed")

JsonableValue: TypeAlias = "dict[str, JsonableValue] | list[JsonableValue] | str | int | float | bool | None"


@dataclass(frozen=True, kw_only=True)
class StepPromptTemplates:
    """The two prompt templates a step is rendered with."""

    step_system_prompt_template: str = DEFAULT_SYSTEM_PROMPT_TEMPLATE
    """System prompt: the step protocol (tools, outcomes). `$allowed_outcomes` and `$raise_types` are filled in."""

    step_user_prompt_template: str = DEFAULT_USER_PROMPT_TEMPLATE
    """User prompt with the three delimited sections; `$program`, `$locals` and `$globals` are filled in."""


@dataclass(frozen=True, kw_only=True)
class StepContextLimits:
    """Bounds on the dynamic context rendered into a prompt or a tool result (tokens are estimates)."""

    locals_max_tokens: int = 8_000
    """Token budget of the whole locals summary."""

    locals_max_items: int = 80
    """How many step locals the summary lists at most."""

    globals_max_tokens: int = 4_000
    """Token budget of the whole globals summary."""

    globals_max_items: int = 40
    """How many referenced globals the summary lists at most."""

    value_max_tokens: int = 200
    """Token budget of one value inside a summary."""

    tool_result_max_tokens: int = 1_200
    """Token budget of the `value` of one tool result envelope."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"`StepContextLimits.{f.name}` must be a positive int, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class StepExecutorConfiguration:
    """Everything that decides how a step executor talks to its model."""

    model: Any = DEFAULT_MODEL
    """A `provider:model` string (for example `openai-responses:gpt-5.4-nano`) or a pydantic-ai `Model`."""

    model_settings: Mapping[str, Any] | None = None
    """Settings forwarded to every model request; a pydantic model is turned into a dict."""

    tokenizer_encoding: str | None = None
    """tiktoken encoding used for budgets; `None` picks it from the model name, then `o200k_base`."""

    strict_tokenizer: bool = False
    """Raise instead of estimating when the tokenizer vocabulary cannot be loaded (offline)."""

    prompts: StepPromptTemplates = field(default_factory=StepPromptTemplates)
    """Prompt templates."""

    context_limits: StepContextLimits = field(default_factory=StepContextLimits)
    """Bounds on rendered context."""

    json_renderer_style: JsonRendererStyle = "default"
    """How values are rendered in prompts and tool results: `strict`, `default` or `detailed`."""

    context_redaction: ContextRedaction = field(default_factory=ContextRedaction)
    """Which names and values are masked before anything reaches the model, a log or a display."""

    system_prompt_suffix_fragments: tuple[str, ...] = ()
    """Text appended to the system prompt."""

    user_prompt_suffix_fragments: tuple[str, ...] = ()
    """Text appended to the user prompt."""

    def __post_init__(self) -> None:
        if isinstance(self.model, str) and ":" not in self.model:
            raise ValueError(
                f"`model` must be a `provider:model` string such as {DEFAULT_MODEL!r}, got {self.model!r}"
            )
        if self.json_renderer_style not in JSON_RENDERER_STYLES:
            raise ValueError(
                f"`json_renderer_style` must be one of {JSON_RENDERER_STYLES}, got {self.json_renderer_style!r}"
            )
        settings = self.model_settings
        if settings is not None and hasattr(settings, "model_dump"):
            object.__setattr__(self, "model_settings", settings.model_dump(exclude_none=True))
        object.__setattr__(self, "system_prompt_suffix_fragments", tuple(self.system_prompt_suffix_fragments))
        object.__setattr__(self, "user_prompt_suffix_fragments", tuple(self.user_prompt_suffix_fragments))

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
    """A partial configuration: fields left at `None` keep the value they patch."""

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
