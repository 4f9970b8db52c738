"""The layout of a replay store file: its entries (`Exchange`), the `shared` section, and checks on load.

A file is one YAML mapping: `format`, `shared` (the instructions, tools and output definitions every round of
a step repeats, kept once) and `exchanges` last, as a block list, so a recorder can append an entry as text.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse

from ..errors import NighthawkError
from ._canonical import digest_of, outline_of

__all__ = [
    "FORMAT_VERSION",
    "HEADER",
    "Exchange",
    "appendable",
    "check_document",
    "entry_exchange",
    "library_versions",
    "share",
]

FORMAT_VERSION = 1
"""Version of the store file layout, written as `format:` at the top of every file."""

# Request fields every round of a step repeats; the file keeps one copy in `shared` and refers to it.
_SHARED_FIELDS = ("instructions", "tools", "output")
_SHARED_PREFIX = "shared:"
HEADER = (
    "# Nighthawk replay store: one entry per model exchange. Instructions and tool definitions are kept\n"
    "# once under `shared` (or, in an entry appended since the file was compacted, under the entry's own\n"
    "# `shared`). Requests are matched by content, so this file may be edited by hand. To re-record with a\n"
    "# real model, see docs/offline.md.\n"
)


@dataclass(frozen=True, kw_only=True)
class Exchange:
    """One request and the response that answered it."""

    request: Mapping[str, Any]
    """The canonical request (see `canonical_request`); its digest is the lookup key."""
    response: Mapping[str, Any]
    """The response as pydantic-ai serialises it, without volatile fields, call ids renumbered."""
    model: str
    """Which model produced the response, as `system:model_name`."""
    authored: bool
    """True when a person or a scripted model wrote the response rather than a real provider."""
    created_with: str
    """Versions of nighthawk and pydantic-ai that wrote the entry."""
    block: str | None = None
    """`module:line` of the Natural block that asked (for readers and messages; not part of the key)."""
    round: int = 1
    """Which request of the block's step this is: 1 for the first, 2 after one tool round, ..."""
    rendering: Mapping[str, Any] | None = None
    """The context limits and renderer style the prompt was rendered with. Not part of the key: a miss
    compares them with the current ones, to say when a setting rather than the program caused it."""
    digest: str = field(init=False, repr=False)
    """sha256 of the canonical request, computed from `request`, so a hand-edited request still matches."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", digest_of(self.request))

    def model_response(self) -> ModelResponse:
        """A fresh pydantic-ai `ModelResponse` for this exchange (its timestamp is now)."""
        (response,) = ModelMessagesTypeAdapter.validate_python([copy.deepcopy(dict(self.response))])
        assert isinstance(response, ModelResponse)
        return response

    def _sort_key(self) -> tuple[str, int, str]:
        return (self.block or "", self.round, self.digest)

    def _as_yaml(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "block": self.block,
            "round": self.round,
            "model": self.model,
            "authored": self.authored,
            "created_with": self.created_with,
        }
        if self.rendering is not None:
            entry["rendering"] = dict(self.rendering)
        return {**entry, "request": dict(self.request), "response": dict(self.response)}

    @functools.cached_property
    def _outline(self) -> tuple[frozenset[str], int]:
        return outline_of(self.request)


@functools.cache
def library_versions() -> str:
    """The versions of nighthawk and pydantic-ai, as written to an entry's `created_with`."""
    from importlib import metadata

    try:
        nighthawk_version = metadata.version("nighthawk-jupyter")
    except metadata.PackageNotFoundError:
        nighthawk_version = "source"
    return f"nighthawk {nighthawk_version}, pydantic-ai {metadata.version('pydantic-ai-slim')}"


def share(request: dict[str, Any], shared: dict[str, Any]) -> dict[str, Any]:
    """Move the parts every round repeats (instructions, tools, output) to `shared`, leaving a reference."""
    compact = dict(request)
    for key in _SHARED_FIELDS:
        if key in compact:
            reference = f"{_SHARED_PREFIX}{key}-{digest_of({key: compact[key]})[:12]}"
            shared[reference] = compact[key]
            compact[key] = reference
    return compact


def _expand(request: Any, shared: Mapping[str, Any]) -> Any:
    if not isinstance(request, dict):
        raise ValueError(f"an exchange's `request` must be a mapping, got {type(request).__name__}")
    expanded = dict(request)
    for key in _SHARED_FIELDS:
        reference = expanded.get(key)
        if isinstance(reference, str) and reference.startswith(_SHARED_PREFIX):
            if reference not in shared:
                raise ValueError(f"`request.{key}` refers to {reference!r}, which the `shared` section lacks")
            expanded[key] = shared[reference]
    return expanded


# The file ends with its `exchanges` block list when the last top-level `exchanges:` line is followed only by
# list items, indented lines, comments and blank lines; an entry can then be appended as text.
_APPENDABLE = re.compile(r"^exchanges:[ \t]*$", re.MULTILINE)
_NOT_APPENDABLE = re.compile(r"^(?:[^-#\s\n]|-[^ \n])", re.MULTILINE)
_DOCUMENT_KEYS = frozenset({"format", "shared", "exchanges"})
_ENTRY_TYPES: dict[str, tuple[type, ...]] = {
    "block": (str, type(None)),
    "round": (int,),
    "model": (str,),
    "authored": (bool,),
    "created_with": (str,),
    "rendering": (dict, type(None)),
    "request": (dict,),
    "response": (dict,),
    "shared": (dict,),
}
_REQUIRED_KEYS = ("model", "authored", "created_with", "request", "response")


def appendable(text: str) -> bool:
    """Whether `text` ends with its top-level `exchanges:` block list, so an entry can be appended as text."""
    end = max((match.end() for match in _APPENDABLE.finditer(text)), default=None)
    return end is not None and _NOT_APPENDABLE.search(text, end) is None


def check_document(document: Any, fail: Callable[..., NighthawkError]) -> None:
    """Fail (with `fail`) unless `document` is a mapping of this `format` with only the known top-level keys."""
    if not isinstance(document, dict):
        raise fail(f"the file holds a {type(document).__name__}, not a mapping with `format` and `exchanges`")
    if document.get("format") != FORMAT_VERSION:
        raise fail(f"`format` is {document.get('format')!r}, expected {FORMAT_VERSION}")
    unknown = sorted(set(map(str, document)) - _DOCUMENT_KEYS)
    if unknown:
        raise fail(f"unexpected top-level keys {unknown}; expected `format`, `shared` and `exchanges`")
    if not isinstance(document.get("shared") or {}, dict):
        raise fail("`shared` must be a mapping")
    if not isinstance(document.get("exchanges") or [], list):
        raise fail("`exchanges` must be a list")


def entry_exchange(entry: Any, shared: Mapping[str, Any], position: int, fail: Callable[..., NighthawkError]) -> Exchange:
    """The `Exchange` a file entry describes; a wrong shape fails naming the entry."""
    if not isinstance(entry, dict):
        raise fail(f"exchange {position} is a {type(entry).__name__}, expected a mapping")
    label = f"exchange {position} (block {entry.get('block')!r}, round {entry.get('round', 1)!r})"
    unknown = sorted(set(map(str, entry)) - set(_ENTRY_TYPES))
    if unknown:
        raise fail(f"{label} has unknown keys {unknown}")
    missing = [f"`{key}`" for key in _REQUIRED_KEYS if key not in entry]
    if missing:
        raise fail(f"{label} lacks {', '.join(missing)}")
    for key, kinds in _ENTRY_TYPES.items():
        value = entry.get(key)
        if key in entry and (not isinstance(value, kinds) or (key == "round" and isinstance(value, bool))):
            expected = " or ".join("null" if kind is type(None) else kind.__name__ for kind in kinds)
            raise fail(f"{label}: `{key}` must be {expected}, got {type(value).__name__}")
    fields_ = {key: value for key, value in entry.items() if key != "shared"}
    try:
        return Exchange(**{**fields_, "request": _expand(entry["request"], shared)})
    except (ValueError, TypeError) as exc:
        raise fail(f"{label}: {exc}", exc) from exc
