"""`%nighthawk prompt PROGRAM`: what the next step of a program would send, with each part's tokens.

The step is built as `%%natural` builds it (the same frame over the namespace, the executor in force, its
limits and redaction), and its prompts are rendered as the executor renders them; no model is asked and
nothing in the namespace changes. Counts are the estimate every prompt budget uses (within 0.9 to 1.5 of
the real o200k count), so they are the same on every machine.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from IPython.core.error import UsageError
from nighthawk.configuration import StepExecutorConfiguration
from nighthawk.errors import NighthawkError
from nighthawk.program.block import parse_program

from ._namespace import build_frame

__all__ = ["prompt_report"]

_WHERE = "%nighthawk prompt"
_SECTIONS = ("PROGRAM", "GLOBALS", "LOCALS")


def prompt_report(shell: Any, state: Any, text: str) -> str:
    """The system prompt, the tool definitions and the user prompt the next step of `text` would send, each
    headed by its token count; a table of the counts first.

    Raises:
        UsageError: No program was given, or it does not parse or names an unbound variable.
    """
    if not text.strip():
        raise UsageError(f"{_WHERE}: give the program, as you would write it in a %%natural cell")
    from nighthawk.model._prompt import render_prompts
    from nighthawk.model._step_agent import build_agent, output_spec, user_tool
    from nighthawk.prompting._media import collect_attachments
    from nighthawk.prompting._tokens import estimate_tokens
    from nighthawk.road.runner import prepared_step
    from pydantic_ai import Tool

    state.settings.ensure_installed()
    try:
        program = parse_program(textwrap.dedent(text), filename=_WHERE, line=1)
        frame = build_frame(shell, program, step_id=f"{_WHERE}:1", filename=_WHERE, line=1)
        with prepared_step(program, frame) as (step, configuration):
            limits = step.rendering.limits
            attachments = collect_attachments(
                program.reads, step.step_locals, max_items=limits.media_max_items, max_bytes=limits.media_max_bytes
            )
            system, user = render_prompts(step, configuration or StepExecutorConfiguration(), attachments)
    except (NighthawkError, NameError) as exc:
        raise UsageError(f"{_WHERE}: {exc}") from exc
    outcome = output_spec(step.outcome_schema)
    agent = build_agent(outcome)
    definitions = [Tool(agent.tools[name], takes_ctx=True).tool_def for name in ("nh_eval", "nh_assign")]
    definitions += [user_tool(definition).tool_def for definition in step.tools.values()]
    tools = [
        json.dumps({"name": tool.name, "description": tool.description, "parameters": tool.parameters_json_schema})
        for tool in definitions
    ]
    tools.append(json.dumps({"name": outcome.name, "description": outcome.description, "parameters": step.outcome_schema}))
    parts = {"system prompt": system, "tool definitions": "\n".join(tools)}
    for section in _SECTIONS:
        parts[section] = _section(user, section)
    counts = {name: estimate_tokens(part) for name, part in parts.items()}
    total = sum(counts.values()) + estimate_tokens(user) - sum(counts[section] for section in _SECTIONS)
    lines = [f"{name:<18}{count:>7} tokens" for name, count in counts.items()]
    lines.append(f"{'total':<18}{total:>7} tokens (estimated, as prompt budgets are; markers included)")
    lines += ["", f"--- system prompt ({counts['system prompt']} tokens)", system]
    lines += ["", f"--- tool definitions ({counts['tool definitions']} tokens)", *tools]
    lines += ["", f"--- user prompt ({estimate_tokens(user)} tokens)", user]
    return "\n".join(lines)


def _section(user: str, name: str) -> str:
    start, end = f"<<<NH:{name}>>>", f"<<<NH:END_{name}>>>"
    if start not in user or end not in user:
        return ""  # a custom template without this section
    return user[user.index(start) + len(start) : user.index(end)].strip("\n")
