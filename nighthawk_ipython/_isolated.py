"""Isolated steps in a notebook: `%nighthawk isolated on|off` for every step of the kernel, `%%natural
--isolated` for one cell. Both put in force the same oversight, `nighthawk.oversight.isolated()` with no
writable folder (a scope's own `isolated(writable=...)` is asked first and wins)."""

from __future__ import annotations

from nighthawk.oversight import add_process_oversight, isolated, remove_process_oversight

__all__ = ["ISOLATED", "use_isolated"]

ISOLATED = isolated()


def use_isolated(on: bool) -> None:
    """Turn isolation of every step of the kernel on or off."""
    if on:
        add_process_oversight(ISOLATED)
    else:
        remove_process_oversight(ISOLATED)
