"""Natural functions the provider and coding-agent contract tests share: each backend runs the same blocks."""

from __future__ import annotations

import nighthawk as nh


@nh.natural_function
def compute(x: int) -> int:
    """natural
    Return ten times <x>; raise ValueError when it cannot be done.
    """
    return -1


@nh.natural_function
def write_or_report(x: int) -> tuple[str, BaseException | None]:
    """Return the write binding as the caller sees it after the block, and the block's error."""
    y = "before"
    try:
        """natural
        Set <:y> to "after <x>".
        """
    except nh.ExecutionError as error:
        return y, error
    return y, None
