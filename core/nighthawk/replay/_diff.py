"""The message of a replay miss: where it happened, a diff against the nearest stored request, and what
besides the program differs from when that request was recorded (rendering settings, model settings,
library versions)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from ._format import Exchange, library_versions
from ._mode import MODE_VARIABLE
from ._store import ReplayStore
from ._yaml import to_yaml

__all__ = ["miss_message"]


def miss_message(
    store: ReplayStore,
    request: Mapping[str, Any],
    block: str | None,
    round_: int,
    rendering: Mapping[str, Any] | None,
) -> str:
    """Why `store` has no answer for `request` (asked by `block` in round `round_`) and how to fix it."""
    where = f"block {block!r}, round {round_}" if block else f"round {round_} of a request made outside a Natural block"
    fix = (
        f'Re-record with mode="record" (or {MODE_VARIABLE}=record), or "auto" to record only what is missing; '
        "see docs/offline.md."
    )
    nearest = store.nearest(request, block=block, round_=round_)
    if nearest is None:
        return f"the replay store {str(store.path)!r} is empty or missing, so it has no answer for {where}. {fix}"
    diff = list(
        difflib.unified_diff(
            to_yaml(dict(nearest.request)).splitlines(),
            to_yaml(dict(request)).splitlines(),
            fromfile=f"stored ({nearest.block or 'no block'}, round {nearest.round})",
            tofile="requested",
            lineterm="",
            n=1,
        )
    )
    if len(diff) > 60:
        diff = [*diff[:60], f"... {len(diff) - 60} more diff lines"]
    causes = _other_causes(nearest, request, rendering)
    cause_text = (
        "Besides the program and the data, these differ from when the nearest entry was recorded:\n"
        + "\n".join(f"  - {cause}" for cause in causes)
        + "\n"
        if causes
        else ""
    )
    return (
        f"the replay store {str(store.path)!r} has no answer for {where}: the prompt, the data in scope, the "
        "tools or the settings differ from every recorded request. "
        + cause_text
        + "Against the nearest one:\n"
        + "\n".join(diff)
        + f"\n{fix}"
    )


def _other_causes(nearest: Exchange, request: Mapping[str, Any], rendering: Mapping[str, Any] | None) -> list[str]:
    """Differences that are not the program or the data: rendering settings, model settings, versions."""
    causes = []
    if rendering is not None and nearest.rendering is not None:
        recorded, current = _flatten(nearest.rendering), _flatten(rendering)
        for key in sorted(recorded.keys() | current.keys()):
            if recorded.get(key) != current.get(key):
                causes.append(f"setting `{key}`: recorded with {recorded.get(key)!r}, now {current.get(key)!r}")
    if nearest.request.get("settings") != request.get("settings"):
        causes.append(
            f"model settings: recorded with {nearest.request.get('settings') or {}!r}, now {request.get('settings') or {}!r}"
        )
    if nearest.created_with != library_versions():
        causes.append(f"library versions: recorded with {nearest.created_with}, now {library_versions()}")
    return causes


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
