"""Helpers for the tests of isolated steps: a natural function whose step runs the model's code, and a run of one
expression in it under `isolated()`, reporting what the model read back or the step's error."""

from __future__ import annotations

import nighthawk as nh
from scripting import finish, model_code, scripted_executor


@nh.natural_function
def look(data: object = None) -> object:
    result = None
    """natural
    Look at <data>; set <:result> or return what you found.
    """
    return result


def run_isolated(channel: str, expression: str, **walls: object) -> str:
    """Run `expression` through `channel` in an isolated step; what the model read next, or the step's error."""
    executor, script = scripted_executor(model_code(channel, expression), [finish("return", return_expression="result")])
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated(**walls)):  # type: ignore[arg-type]
        try:
            look()
        except Exception as stopped:
            return f"{type(stopped).__name__}: {stopped}"
    return " ".join(script.last_tool_results()) if len(script.seen) > 1 else ""
