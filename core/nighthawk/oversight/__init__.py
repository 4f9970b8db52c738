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

- While the model's code runs (`nh_eval`, `nh_assign`, a return expression, and the functions they call)
  an oversight's runtime guards are enforced on Python's audit events: `read_only()` refuses changes to
  files, processes, threads and signals, `no_network()` sockets and name look-ups. A refused operation
  raises `OperationRefusedError` (a `PermissionError`) in the model's code, which the model reads as an
  `execution` error; the step goes on.

- Under `isolated(...)` the model's code of each step runs in a child process forked at its first call and
  walled by the operating system (Landlock, seccomp, a pid namespace, resource limits); its write bindings
  and return value come back, what it changed in place does not. Linux only: elsewhere it refuses to run.

`read_only()`, `no_network()` and `allow_tools(...)` are ready-made policies, `combine(...)` asks several in
turn, and `add_process_oversight` puts one in force for the whole process (the kernel's confirm mode). Every
decision and every refusal is an `OversightDecision` event and an event on the step's OpenTelemetry span.
"""

from __future__ import annotations

from ..errors import IsolationError, IsolationUnavailableError, OperationRefusedError, OversightRejectedError
from ._kinds import (
    Accept,
    Oversight,
    Reject,
    Rewrite,
    RuntimeGuard,
    StepCommitDecision,
    StepCommitProposal,
    ToolCall,
    ToolCallDecision,
    combine,
)
from .isolation import isolated
from ._oversee import add_process_oversight, remove_process_oversight
from ._policies import DENIED_CALLS, allow_tools, no_network, read_only

__all__ = [
    "DENIED_CALLS",
    "Accept",
    "IsolationError",
    "IsolationUnavailableError",
    "OperationRefusedError",
    "Oversight",
    "OversightRejectedError",
    "Reject",
    "Rewrite",
    "RuntimeGuard",
    "StepCommitDecision",
    "StepCommitProposal",
    "ToolCall",
    "ToolCallDecision",
    "add_process_oversight",
    "allow_tools",
    "combine",
    "isolated",
    "no_network",
    "read_only",
    "remove_process_oversight",
]
