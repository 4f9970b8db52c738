"""Render the system and user prompts of a step from the executor's templates and the step's state."""

from __future__ import annotations

import types
from collections.abc import Sequence
from string import Template

from ..configuration import StepExecutorConfiguration
from ..prompting._media import Attachment, media_placeholders
from ..prompting._mentions import program_mentions
from ..prompting._namespace import render_namespace_summary
from ..prompting._summaries import render_globals_summary, render_locals_summary
from ..road.runtime import prompt_suffix_fragments
from ..secrets._scrubber import current_scrubber
from ..step._context import StepContext

__all__ = ["prompt_cache_settings", "render_prompts"]

_ABSENT = object()
_EMPTY_GLOBALS = "<<<NH:GLOBALS>>>\n\n<<<NH:END_GLOBALS>>>\n"


def render_prompts(
    step: StepContext, configuration: StepExecutorConfiguration, attachments: Sequence[Attachment] = ()
) -> tuple[str, str]:
    """Return `(system_prompt, user_prompt)` for `step`; summaries are bounded by the context limits, and the
    bindings whose values are `attachments` show their placeholders."""
    policy = step.rendering
    options = {
        "limits": policy.limits,
        "style": policy.style,
        "counter": policy.counter,
        "redaction": policy.redaction,
    }
    visible_locals = {name: value for name, value in step.step_locals.items() if not name.startswith("__nh")}
    placeholders = media_placeholders(attachments)
    references = step.global_references()
    if step.module_namespace:
        # A notebook's hundred names in two tiers: see `_namespace.py`. Its modules are named on the import
        # lines there, so the globals summary lists only the other names the program binds (builtins).
        references = [name for name in references if not isinstance(step.step_globals.get(name), types.ModuleType)]
        locals_summary = render_namespace_summary(
            visible_locals,
            step.step_globals,
            mentioned=program_mentions(step.program),
            shown_elsewhere=[name for name in references if name not in visible_locals],
            placeholders=placeholders,
            **options,
        )
    else:
        # A read binding holding a global is the same for every call of the function: listed first, it joins
        # the prompt's shared start (what differs per call, the arguments, comes last).
        shared = [name for name, value in visible_locals.items() if step.step_globals.get(name, _ABSENT) is value]
        locals_summary = render_locals_summary(
            visible_locals,
            priority=(*step.program.reads, *step.program.writes),
            placeholders=placeholders,
            shared=shared,
            **options,
        )
    globals_summary = render_globals_summary(references, visible_locals, step.step_globals, **options)
    scope_system, scope_user = prompt_suffix_fragments()
    system = configuration.prompts.step_system_prompt_template
    user = Template(configuration.prompts.step_user_prompt_template).safe_substitute(
        program=step.program.prompt_text, locals=locals_summary, globals=globals_summary
    )
    if step.module_namespace and not globals_summary:
        # A cell's names are all in LOCALS; an empty GLOBALS section would be paid for on every request.
        user = user.replace(_EMPTY_GLOBALS, "", 1)
    # The program text may hold an interpolated secret (an f-string block). The system prompt is the
    # protocol, never user data: it is sent as written.
    return (
        _with_suffixes(system, (*configuration.system_prompt_suffix_fragments, *scope_system)),
        current_scrubber().scrub(_with_suffixes(user, (*configuration.user_prompt_suffix_fragments, *scope_user))),
    )


def _with_suffixes(text: str, fragments: tuple[str, ...]) -> str:
    return "\n\n".join((text, *fragments)) if fragments else text


def prompt_cache_settings(step: StepContext) -> dict[str, object]:
    """Model settings that let providers cache the part of a step's prompt every call of its block shares.

    Anthropic caches only up to the cache points a request sets: one after the tool definitions and one after
    the instructions. OpenAI caches prefixes of 1,024 tokens or more on its own and routes requests with the
    same `prompt_cache_key` to the same cache: one key per block, so a map's items land together. Each model
    reads only its own provider's settings; `model_settings` may override them, and a replay store does not
    key on them (they change where a request is answered, not what).
    """
    return {
        "anthropic_cache_tool_definitions": True,
        "anthropic_cache_instructions": True,
        "openai_prompt_cache_key": f"nighthawk:{step.step_id}",
    }
