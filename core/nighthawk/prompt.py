"""Render the system and user prompts of a step from the executor's templates and the step's state."""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

from ._media import Attachment, media_placeholders
from .secrets._scrubber import current_scrubber
from .configuration import StepExecutorConfiguration
from .context import render_globals_summary, render_locals_summary
from .runtime import prompt_suffix_fragments
from .step import StepContext

__all__ = ["render_prompts"]


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
    locals_summary = render_locals_summary(
        visible_locals,
        priority=(*step.program.reads, *step.program.writes),
        placeholders=media_placeholders(attachments),
        **options,
    )
    globals_summary = render_globals_summary(step.program.references, visible_locals, step.step_globals, **options)
    scope_system, scope_user = prompt_suffix_fragments()
    system = configuration.prompts.step_system_prompt_template
    user = Template(configuration.prompts.step_user_prompt_template).safe_substitute(
        program=step.program.prompt_text, locals=locals_summary, globals=globals_summary
    )
    # The program text may hold an interpolated secret (an f-string block). The system prompt is the
    # protocol, never user data: it is sent as written.
    return (
        _with_suffixes(system, (*configuration.system_prompt_suffix_fragments, *scope_system)),
        current_scrubber().scrub(_with_suffixes(user, (*configuration.user_prompt_suffix_fragments, *scope_user))),
    )


def _with_suffixes(text: str, fragments: tuple[str, ...]) -> str:
    return "\n\n".join((text, *fragments)) if fragments else text
