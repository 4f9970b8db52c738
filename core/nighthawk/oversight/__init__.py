"""Oversight: see, and refuse, what the model runs before it runs, and every step before it commits.

`nighthawk.scope(oversight=Oversight(inspect_tool_call=..., inspect_step_commit=...))` puts two hooks in
force for the blocks run inside it; nested scopes inherit them and `oversight=None` clears them.

- Before every tool call (`nh_eval`, `nh_assign`, user tools) `inspect_tool_call` sees a `ToolCall`. A
  `Reject(reason)` keeps the call from running and hands the model an `execution` error with the reason,
  which it can work around like any failed call. A return expression is seen too, before it is evaluated,
  as a call of the tool `nh_outcome` with `{"kind": "return", "return_expression": ...}`; a `Reject` there
  raises `OversightRejectedError` and evaluates nothing.
- Before a step commits `inspect_step_commit` sees a `StepCommitProposal`. `Reject(reason)` raises
  `OversightRejectedError` and nothing is committed; `Rewrite(...)` replaces values, checked against the
  write bindings' types like any assigned value. A step that ends with a `raise` outcome commits nothing
  and is not shown.

`read_only()` and `allow_tools(...)` are ready-made tool-call hooks, `combine(...)` asks several in turn,
and `add_process_oversight` puts one in force for the whole process (the kernel's confirm mode). Every
decision is an `OversightDecision` event and an event on the step's OpenTelemetry span.
"""

from __future__ import annotations

from ..errors import OversightRejectedError
from ._oversee import add_process_oversight, remove_process_oversight
from ._kinds import (
    Accept,
    Oversight,
    Reject,
    Rewrite,
    StepCommitDecision,
    StepCommitProposal,
    ToolCall,
    ToolCallDecision,
    combine,
)
from ._policies import DENIED_CALLS, allow_tools, read_only

__all__ = [
    "DENIED_CALLS",
    "Accept",
    "Oversight",
    "OversightRejectedError",
    "Reject",
    "Rewrite",
    "StepCommitDecision",
    "StepCommitProposal",
    "ToolCall",
    "ToolCallDecision",
    "add_process_oversight",
    "allow_tools",
    "combine",
    "read_only",
    "remove_process_oversight",
]
