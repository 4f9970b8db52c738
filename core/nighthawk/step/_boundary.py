"""The error a tool call hands back to the model: the `error` part of every tool's answer envelope.

It lives below the step, the tools and the outcome, because all three raise it.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["ErrorKind", "ToolBoundaryError"]

ErrorKind: TypeAlias = Literal["invalid_input", "resolution", "execution", "transient", "internal"]
"""What a failed tool call reports; a value that does not fit its type is `invalid_input`."""


class ToolBoundaryError(Exception):
    """A tool failure the model can act on: it becomes the `error` of the envelope."""

    def __init__(self, kind: ErrorKind, message: str, guidance: str = "") -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.guidance = guidance
