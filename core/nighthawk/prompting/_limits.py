"""How much of a step's context a prompt shows, and in which style: the settings the renderers read.

They are part of the executor configuration (`nighthawk.configuration` names them again, and
`nh.StepContextLimits` is this class); they live here so that the renderers never import the configuration
that is built on top of them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, TypeAlias

__all__ = ["JSON_RENDERER_STYLES", "JsonRendererStyle", "StepContextLimits"]

JsonRendererStyle: TypeAlias = Literal["strict", "default", "detailed"]
JSON_RENDERER_STYLES: tuple[JsonRendererStyle, ...] = ("strict", "default", "detailed")


@dataclass(frozen=True, kw_only=True)
class StepContextLimits:
    """Bounds on the dynamic context rendered into a prompt or a tool result (tokens are always estimated)."""

    locals_max_tokens: int = 8_000
    """Token budget of the whole locals summary."""

    locals_max_items: int = 80
    """How many step locals the summary lists at most."""

    globals_max_tokens: int = 4_000
    """Token budget of the whole globals summary."""

    globals_max_items: int = 40
    """How many referenced globals the summary lists at most."""

    value_max_tokens: int = 200
    """Token budget of one value inside a summary."""

    tool_result_max_tokens: int = 1_200
    """Token budget of the `value` of one tool result envelope."""

    media_max_items: int = 16
    """How many images and documents the read bindings of one step may attach (see docs/media.md)."""

    media_max_bytes: int = 20_000_000
    """Bytes of images and documents one step may attach, all together; also the largest file a
    `pathlib.Path` binding is read from."""

    object_max_methods: int = 0
    """Public methods listed, with their signatures, under an object of a user class in a summary (as
    nighthawk-python's object view does). 0, the default, lists none: the prompts stay as they were."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            least = 0 if f.name == "object_max_methods" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                what = "a whole number of at least 0" if least == 0 else "a positive int"
                raise ValueError(f"`StepContextLimits.{f.name}` must be {what}, got {value!r}")
