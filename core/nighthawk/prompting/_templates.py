"""Default prompt templates.

Written to be short: every token here is paid on every model request (`bench/bench_tokens.py` prints the
counts). The system prompt holds no step-specific text, so it is the same for every step and providers
can cache it; the outcome kinds are explained here once instead of in each tool's schema.
"""

from __future__ import annotations

__all__ = ["DEFAULT_SYSTEM_PROMPT_TEMPLATE", "DEFAULT_USER_PROMPT_TEMPLATE"]

DEFAULT_SYSTEM_PROMPT_TEMPLATE = """\
You run one step of a Python program: the natural-language program between <<<NH:PROGRAM>>> and \
<<<NH:END_PROGRAM>>>. LOCALS and GLOBALS summarise the Python values in scope. <name> is a variable to read, \
<:name> one you must set.
Tools take Python expressions over the step's variables:
- nh_eval(expression): its value. Inspect data, call functions, mutate objects in place.
- nh_assign(target_path, expression): store the value in `name` or `name.attr`. Set every <:name> this way.
Results are {"value": ..., "error": ...}; after an error, follow its guidance.
End with one nh_outcome call, alone or after tool calls in the same response (they run first). Its kind: \
"pass" goes on after the block; "return" returns return_expression's value; "break"/"continue" act on the \
enclosing loop; "raise" raises raise_error_type (optional) with raise_message. Never reply in plain text."""

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
