"""Short, safe texts about a value: its type name, a bounded repr, the media type its bytes start like, the
size of a byte count, and the shapes the renderer walks (array rows, attributes whose read may fail).

Split from `_render.py`, which walks a value within a budget; these pieces know nothing of budgets beyond
a character count, and `_media.py` uses the media sniffing without the renderer.
"""

from __future__ import annotations

import dataclasses
import json
import re
import reprlib
from collections.abc import Collection, Iterator

from ._tables import display_number

__all__ = [
    "ELLIPSIS",
    "SNIFF_BYTES",
    "ArrayRows",
    "Unavailable",
    "array_shape",
    "attributes",
    "bounded_repr",
    "escape",
    "safe_repr",
    "short_number_reprs",
    "size_text",
    "sniff_media_type",
    "type_name",
]

ELLIPSIS = "…"
# Secrets that straddle a cut are still recognised: the scrubber sees this much text past the cut.
SCRUB_MARGIN = 512
_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Leading bytes of the formats the providers take, checked in order. WebP is RIFF with a `WEBP` tag at 8.
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
)
SNIFF_BYTES = 16
"""How many leading bytes `sniff_media_type` reads."""


def sniff_media_type(data: bytes | bytearray | memoryview) -> str | None:
    """The media type `data` starts like (PNG, JPEG, GIF, WebP, PDF), or `None`."""
    head = bytes(data[:SNIFF_BYTES])
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return next((media_type for signature, media_type in _SIGNATURES if head.startswith(signature)), None)


def size_text(size: int) -> str:
    """A byte count as people read it: `512 B`, `23.6 kB`, `4.1 MB`."""
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1000:.1f} kB"
    return f"{size / 1_000_000:.1f} MB"


def type_name(value: object) -> str:
    """Return a short readable name for the type of `value` (`int`, `DataFrame`, `Outer.Inner`)."""
    cls = type(value)
    qualname = getattr(cls, "__qualname__", None) or cls.__name__
    # Classes defined in a function carry `f.<locals>.` in their qualified name; the bare name reads better.
    return cls.__name__ if "<locals>" in qualname else qualname


def _strip_addresses(text: str) -> str:
    # Default reprs embed memory addresses; dropping them keeps renderings deterministic across runs.
    return _ADDRESS.sub("", text)


_REPR = reprlib.Repr()
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlong = 60


def bounded_repr(value: object, max_chars: int) -> str:
    """Return a Python-syntax repr of `value` that is cut to `max_chars` and never fails.

    Containers are sampled by `reprlib`, so their size does not matter; other objects still run their own
    `__repr__`, whose result is cut.
    """
    try:
        text = _REPR.repr(value)
    except Exception as exc:  # a user __repr__ may raise anything
        return f"<repr failed: {type(exc).__name__}>"
    text = _strip_addresses(text[: max_chars + 64])
    return text if len(text) <= max_chars else text[: max(max_chars - 1, 0)] + ELLIPSIS


def safe_repr(value: object, max_chars: int) -> str:
    try:
        text = repr(value)
    except Exception as exc:
        return f"<repr failed: {type(exc).__name__}>"
    # Strip before cutting so a cut never leaves half an address behind.
    return _strip_addresses(text[: max_chars + SCRUB_MARGIN])


def escape(text: str) -> str:
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return text  # nothing JSON escapes (a key, a word, a number): as `json.dumps` would give it
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    # Lone surrogates (from surrogateescape decoding) cannot be sent as UTF-8; escape them as \\uXXXX.
    return json.dumps(text)[1:-1] if _SURROGATE.search(body) else body


@dataclasses.dataclass(frozen=True, kw_only=True)
class Unavailable:
    """Stands in for an attribute or field whose read raised."""

    error: str
    """Name of the exception type."""


def attributes(value: object, names: list[str]) -> Iterator[tuple[object, object]]:
    for name in names:
        try:
            yield name, getattr(value, name)
        except Exception as exc:
            yield name, Unavailable(error=type(exc).__name__)


def short_number_reprs(value: object, most: int) -> list[str] | None:
    """The reprs of the first `most` items of list or tuple `value` (what `_Walker.render` gives each) when all
    are ints and finite floats under 10**30, each then at most `_MIN_SHARE` characters; else `None`. Told in
    C: no item is dispatched."""
    if type(value) not in (list, tuple):  # a user's list type goes the usual way
        return None
    items = value[:most]  # type: ignore[index]
    if not items or not set(map(type, items)) <= {int, float}:  # a bool, an enum or an int subclass: neither
        return None
    try:
        small = sum(map(abs, items)) < 1e30  # an infinity or a NaN makes the sum one too: neither is below
    except OverflowError:  # an int too big for a float beside a float
        return None
    return list(map(repr, items)) if small else None


def array_shape(value: object) -> tuple[int, ...] | None:
    """Return the shape of an array-like value (a tuple `shape`, a `dtype`/`dtypes` on its class), else `None`."""
    try:
        shape = getattr(value, "shape", None)
        if not isinstance(shape, tuple) or not all(isinstance(d, int) for d in shape):
            return None
        # Look on the class: on a DataFrame, `dtypes` is a property that builds a Series of every column.
        cls = type(value)
        if not (hasattr(cls, "dtype") or hasattr(cls, "dtypes")):
            return None
    except Exception:
        return None
    return shape


class ArrayRows(Collection[object]):
    """A lazy view of the leading axis of an array: `len` is the axis length, items come from indexing."""

    def __init__(self, array: object, length: int) -> None:
        self._array = array
        self._length = length

    def __len__(self) -> int:
        return self._length

    def __contains__(self, item: object) -> bool:  # required by Collection; never used by the walker
        return False

    def __iter__(self) -> Iterator[object]:
        for index in range(self._length):
            row = self._array[index]  # type: ignore[index]
            shape = getattr(row, "shape", None)
            if isinstance(shape, tuple) and shape:
                yield ArrayRows(row, shape[0])
            else:
                item = getattr(row, "item", None)
                # A float at the precision a table shows it (`2.040816`, not `2.0408163265306123`).
                yield display_number(item()) if callable(item) else row
