"""Who shows a map's progress: the `ProgressRenderer` protocol and the factory a front end registers.

Apart from `batch/progress.py` so that a front end can register its factory (the kernel extension does when
the process first runs something, `_first_use`) without importing the map machinery (`nighthawk.batch`
imports the road of a step); `nighthawk.batch.progress` re-exports these names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..budget import UsageTotals
from .._first_use import prepare_pending

__all__ = ["ProgressRenderer", "RendererFactory", "registered_renderer", "use_renderer"]


class ProgressRenderer(Protocol):
    """What a map tells whoever shows its progress, always from the map's own thread. A batch map also calls,
    when the renderer has them, `set_status(text)` (how its batches stand) and `set_unbilled(lines)` (its lines
    at the provider whose answers are not back), from the map's thread before its items start and from the
    background loop afterwards (`batch.progress.MapTally` has both)."""

    def kept_item(self) -> None:
        """An item was answered from a store."""

    def finished_item(self) -> None:
        """An item ran and returned."""

    def failed_item(self, index: int, error: BaseException) -> None:
        """An item failed for good."""

    def shared_item(self, *, failed: bool) -> None:
        """An item was answered by an equal item of the map (`failed`: with that item's failure)."""

    def stopped(self, reason: str) -> None:
        """The map stops before its end: `reason` names the item and the cause (`stopped at item 3: ...`)."""

    def close(self) -> None:
        """The map ended, finished or stopped: show the summary."""

    def tick(self) -> None:
        """About once a second while the map runs, whatever its items do (the elapsed time moves, and what
        the map waits on may have changed). Optional: a renderer without it is not called."""


RendererFactory = Callable[[int | None, UsageTotals, bool | None], ProgressRenderer | None]
"""`factory(total, usage, progress)`: a renderer for a new map (`total` is `None` for a generator; `progress` as
the map was given it), or `None`. A renderer is asked for even with `progress=False`: a front end may have
to know that a map runs (the kernel extension then hides each item's steps) while it shows nothing."""

_factory: RendererFactory | None = None


def registered_renderer() -> RendererFactory | None:
    """The factory registered with `use_renderer`, if any."""
    prepare_pending()  # a front end that waited for the first map registers its factory now
    return _factory


def use_renderer(factory: RendererFactory | None) -> RendererFactory | None:
    """Show the progress of the maps of this process with `factory` (`None`: the stderr line again).

    Returns:
        The factory in use before, so a caller can put it back.
    """
    global _factory
    previous, _factory = _factory, factory
    return previous
