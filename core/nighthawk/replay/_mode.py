"""Which replay mode is in force: the one passed, else `NIGHTHAWK_REPLAY_MODE`, else `replay`."""

from __future__ import annotations

import os
from typing import Literal, TypeAlias

from ..errors import NighthawkError

__all__ = ["MODE_VARIABLE", "ReplayMode", "resolve_mode"]

ReplayMode: TypeAlias = Literal["replay", "record", "auto"]
_MODES: tuple[ReplayMode, ...] = ("replay", "record", "auto")

MODE_VARIABLE = "NIGHTHAWK_REPLAY_MODE"
"""Environment variable giving the mode when none is passed (`replay` when it is unset), so one command can
re-record a whole test suite or notebook: `NIGHTHAWK_REPLAY_MODE=record pytest ...`."""


def resolve_mode(mode: str | None) -> ReplayMode:
    """`mode` checked, or when it is `None` the mode `NIGHTHAWK_REPLAY_MODE` gives (`replay` when unset)."""
    if mode is None:
        mode = os.environ.get(MODE_VARIABLE) or "replay"
        if mode not in _MODES:
            raise NighthawkError(f"unknown replay mode {mode!r} in `{MODE_VARIABLE}`; use one of {', '.join(_MODES)}")
    if mode not in _MODES:
        raise NighthawkError(f"unknown replay `mode` {mode!r}; use one of {', '.join(_MODES)}")
    return mode  # type: ignore[return-value]
