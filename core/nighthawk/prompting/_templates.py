"""Default prompt templates.

Written to be short: every token here is paid on every model request (`bench/bench_tokens.py` prints the
counts). The system prompt holds no step-specific text, so it is the same for every step and providers
can cache it; the outcome kinds are explained here once instead of in each tool's schema.
"""

from __future__ import annotations

__all__ = ["DEFAULT_SYSTEM_PROMPT_TEMPLATE", "DEFAULT_USER_PROMPT_TEMPLATE"]

DEFAULT_SYSTEM_PROMPT_TEMPLATE = """\
You run one step of a Python program written in natural language; LOCALS and GLOBALS list its Python \
values. <name> is a variable to read, <:name> one to set with nh_assign. After a tool error, follow \
its guidance.
End with one nh_outcome call, alone or after tool calls in the same response (they run first): pass goes on \
after the block, return returns return_expression's value, break and continue act on the enclosing loop, \
raise raises raise_error_type with raise_message. Never reply in plain text."""

# What every call of a function shares (the program, the globals summary) comes before what changes per call
# (the locals): a provider's prompt cache reuses the longest identical prefix, so a map's items pay for the
# shared part once.
DEFAULT_USER_PROMPT_TEMPLATE = """\
<<<NH:PROGRAM>>>
$program
<<<NH:END_PROGRAM>>>
<<<NH:GLOBALS>>>
$globals
<<<NH:END_GLOBALS>>>
<<<NH:LOCALS>>>
$locals
<<<NH:END_LOCALS>>>"""
