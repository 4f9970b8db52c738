"""Bounded JSON-like rendering of any Python value for prompt context and tool results.

The spec suggests `headson`, but it summarises JSON *text*: a value would first be serialised whole, which
is unbounded for a 10**7-element list or a 100 MB string. We walk the live object instead and stop once the
budget is spent, so the cost depends on the budget, never on the size of the value.

Output shapes per style (`JsonRendererStyle`):

* `strict`: valid JSON. Items that do not fit are left out without a marker; a cut string ends in `…`.
* `default`: compact pseudo-JSON. Left-out items become `…(+N)`, a cut string ends in `…`.
* `detailed`: JavaScript-like. Left-out items become `/* N more */`, a cut string is followed by
  `/* N more chars */`.

Separators are compact (`{"a":1,"b":[1,2,…]}`). Values with no JSON form (objects, dates, bytes) are JSON
strings, so every style keeps the outer brackets and keys of the value. Bytes that start like an image or a
PDF are named by type and size (`"<image/png, 23.6 kB>"`): their leading bytes say nothing to a reader.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import functools
import itertools
import json
import math
import types
import uuid
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Set,
)
from pathlib import PurePath
from typing import TYPE_CHECKING

from ..secrets import looks_ordinary
from ..secrets._values import credential_columns
from ._reprs import (
    ELLIPSIS,
    SCRUB_MARGIN,
    ArrayRows,
    Unavailable,
    array_shape,
    attributes,
    bounded_repr,
    escape,
    safe_repr,
    short_number_reprs,
    size_text,
    sniff_media_type,
    type_name,
)
from ._tables import column_label, display_number, index_label, readable_key

if TYPE_CHECKING:
    from ..secrets import ContextRedaction
    from ._limits import JsonRendererStyle
    from ._tokens import TokenCounter

__all__ = ["render_value"]

_STYLES = ("strict", "default", "detailed")
_CHARS_PER_TOKEN = 4
# A child gets at least this many characters when the budget allows, so one huge sibling count does not
# shrink every item to a bare ellipsis.
_MIN_SHARE = 32
# ...and up to this fraction of what is left: the first records of a long list show whole (keys and
# short values) instead of every record being cut to a stub; the rest are counted by the marker.
_HEAD_FRACTION = 4
_MAX_DEPTH = 24
_MAX_KEY_CHARS = 80
_MAX_KNOWN_KEYS = 4_096  # remembered per style and masking rules (`_known_keys`), none over `_MAX_KEY_CHARS`
# Beyond this many bits `str(int)` is slow and may exceed `sys.int_max_str_digits`.
_MAX_INT_BITS = 4_000
_SORT_SET_LIMIT = 256
_FRAME_ROWS = 5
_FRAME_COLUMNS = 20
# An array of at least this many items that holds one value says it once (`"all":0.5`).
_MIN_REPEATS = 8
class _Walker:
    """One bounded walk; holds the ids of the containers on the current path to detect cycles."""

    def __init__(self, style: JsonRendererStyle, redaction: ContextRedaction, columns: dict[tuple[int, int | None], str]) -> None:
        self.style = style
        self.redaction = redaction
        self.active: set[int] = set()
        self.known_keys = _known_keys(style, redaction)
        self.columns = columns
        """Column labels by the id of their table and their position, shared by the walks of one `render_value` call: describing a
        column reads all of it, once however often the budget is tried."""

    # --- markers -------------------------------------------------------------------------------------

    def more_items(self, count: int) -> str:
        if self.style == "strict":
            return ""
        # The count tells the model how big the value is (a list of 5,000 records shows a handful).
        return f"/* {count} more */" if self.style == "detailed" else f"{ELLIPSIS}(+{count})"

    def elided(self) -> str:
        return f'"{ELLIPSIS}"' if self.style == "strict" else ELLIPSIS

    # --- strings -------------------------------------------------------------------------------------

    def text(self, s: str, budget: int, *, unit: str = "chars", total: int | None = None) -> str | None:
        """Render `s` as a JSON string of at most `budget` characters, scrubbed and cut if needed.

        `total` is the size of the original when `s` is already a cut (bytes), counted in `unit`.
        """
        if budget < 3:
            return None
        whole = total is None and len(s) <= budget + SCRUB_MARGIN
        window = self.redaction.scrub_text(s if whole else s[: budget + SCRUB_MARGIN])
        if whole:
            body = escape(window)
            if len(body) + 2 <= budget:
                return f'"{body}"'
        n = len(s) if total is None else total
        suffix = f"/* {n} {unit} */" if unit == "bytes" else f"/* {n} more {unit} */"
        suffix = suffix if self.style == "detailed" else ""
        room = budget - 3 - len(suffix)
        if room < 1:
            return f'"{ELLIPSIS}"'
        keep = room
        body = escape(window[:keep])
        while len(body) > room:
            keep -= max(len(body) - room, 1)
            body = escape(window[:keep])
        if suffix and unit != "bytes":
            suffix = f"/* {max(n - keep, 1)} more {unit} */"
        return f'"{body}{ELLIPSIS}"{suffix}'

    def fit(self, s: str, budget: int) -> str | None:
        return s if len(s) <= budget else None

    # --- dispatch ------------------------------------------------------------------------------------

    def render(self, value: object, budget: int, depth: int) -> str | None:
        """Render `value` in at most `budget` characters; `None` when nothing meaningful fits."""
        if budget <= 0:
            return None
        kind = type(value)
        # A number (a dict's value, a field), taken before the general dispatch: what `_scalar` gives it.
        if kind is int and value.bit_length() <= _MAX_INT_BITS:  # type: ignore[attr-defined]
            return self.fit(int.__repr__(value), budget)  # type: ignore[arg-type]
        if kind is float and math.isfinite(value):  # type: ignore[arg-type]
            return self.fit(float.__repr__(value), budget)  # type: ignore[arg-type]
        try:
            return self._render(value, budget, depth)
        except Exception as exc:  # a hostile __len__, __iter__ or property must not break the whole render
            return self.text(f"<render failed: {type(exc).__name__}>", budget)

    def _render(self, value: object, budget: int, depth: int) -> str | None:
        scalar = self._scalar(value, budget)
        if scalar is not _NOT_SCALAR:
            return scalar  # type: ignore[return-value]
        if isinstance(value, type):
            return self.text(f"<class {value.__qualname__}>", budget)
        if isinstance(value, Iterator | AsyncIterator | Awaitable | types.GeneratorType):
            # Iterating would consume it; only the type is safe to show.
            return self.text(f"<{type_name(value)}>", budget)
        if isinstance(value, types.MethodType | functools.partial | types.FunctionType):
            # Their reprs include the bound object or the bound arguments, which may be huge.
            target = getattr(value, "func", value)
            return self.text(f"<{type_name(value)} {getattr(target, '__qualname__', '?')}>", budget)
        if depth >= _MAX_DEPTH:
            return self.fit(self.elided(), budget)
        if id(value) in self.active:
            return self.text("<cycle>", budget)
        self.active.add(id(value))
        try:
            return self._composite(value, budget, depth)
        finally:
            self.active.discard(id(value))

    def _scalar(self, value: object, budget: int) -> object:
        if value is None:
            return self.fit("null", budget)
        if isinstance(value, bool):
            return self.fit("true" if value else "false", budget)
        if isinstance(value, enum.Enum):
            return self.text(f"{type(value).__name__}.{value.name}", budget)
        if isinstance(value, int):
            if value.bit_length() > _MAX_INT_BITS:
                digits = int(value.bit_length() * math.log10(2)) + 1
                return self.text(f"<int with about {digits} digits>", budget)
            return self.fit(int.__repr__(value), budget)
        if isinstance(value, float):
            if math.isfinite(value):
                return self.fit(float.__repr__(value), budget)
            special = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return self.text(special, budget) if self.style == "strict" else self.fit(special, budget)
        if isinstance(value, str):
            return self.text(value, budget)
        if isinstance(value, bytes | bytearray | memoryview):
            size = value.nbytes if isinstance(value, memoryview) else len(value)
            media_type = sniff_media_type(value)
            if media_type is not None:
                return self.text(f"<{media_type}, {size_text(size)}>", budget)
            head = bytes(value[: min(size, budget)])
            if size <= budget:
                return self.text(repr(head), budget)
            return self.text(repr(head), budget, unit="bytes", total=size)
        if isinstance(value, datetime.date | datetime.time):
            return self.text(value.isoformat(), budget)
        if isinstance(value, datetime.timedelta | decimal.Decimal | uuid.UUID | PurePath | complex):
            return self.text(str(value), budget)
        return _NOT_SCALAR

    def _composite(self, value: object, budget: int, depth: int) -> str | None:
        shape = array_shape(value)
        if shape is not None:
            return self._array_like(value, shape, budget, depth)
        if isinstance(value, collections.Counter):
            # Most common first: what a Counter is for. Only as many as the budget can show are picked.
            n = len(value)
            return self._container(n, iter(value.most_common(min(n, budget // 4))), budget, depth, "{}")
        if isinstance(value, Mapping):
            return self._container(len(value), iter(value.items()), budget, depth, "{}")
        if isinstance(value, Set):
            n = len(value)
            items: Iterable[object] = value
            if n <= _SORT_SET_LIMIT:
                # Set order depends on string hashing, which changes between processes.
                try:
                    items = sorted(value)  # type: ignore[type-var]
                except Exception:
                    items = value
            return self._container(n, ((None, item) for item in items), budget, depth, "[]")
        if isinstance(value, Collection):  # list, tuple, range, deque, dict views, user collections
            n = len(value)
            numbers = short_number_reprs(value, budget // 2)
            if n and numbers is not None:
                return self._container(n, iter(()), budget, depth, "[]", numbers=numbers)
            return self._container(n, ((None, item) for item in value), budget, depth, "[]")
        if dataclasses.is_dataclass(value):
            fields = [f.name for f in dataclasses.fields(value) if f.repr]
            return self._container(len(fields), attributes(value, fields), budget, depth, "{}")
        model_fields = getattr(type(value), "model_fields", None)
        if isinstance(model_fields, dict) and hasattr(value, "model_dump"):  # a pydantic model
            names = [name for name, info in model_fields.items() if getattr(info, "repr", True)]
            return self._container(len(names), attributes(value, names), budget, depth, "{}")
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict) and attrs:
            names = [name for name in itertools.islice(attrs, 1024) if not name.startswith("_")]
            if type(value).__repr__ is object.__repr__ and names:
                # A default repr says nothing but the class; the public attributes say more.
                return self._container(len(names), attributes(value, names), budget, depth, "{}")
            # A fitted estimator's repr names its class and parameters; what it learned (`coef_`,
            # `n_features_in_`: scikit-learn's trailing underscore) follows it.
            learned = [name for name in names if name.endswith("_")]
            if learned:
                state = itertools.chain([("repr", _Label(safe_repr(value, budget)))], attributes(value, learned))
                return self._container(len(learned) + 1, state, budget, depth, "{}")
        return self.text(safe_repr(value, budget), budget)

    # --- containers ----------------------------------------------------------------------------------

    def _container(
        self,
        n: int,
        entries: Iterator[tuple[object, object]],
        budget: int,
        depth: int,
        brackets: str,
        *,
        numbers: list[str] | None = None,
    ) -> str | None:
        """Render up to `n` `(key, item)` entries (`key` is `None` in a list), or `numbers`, with fair shares."""
        open_, close = brackets
        if n == 0:
            return self.fit(open_ + close, budget)
        if budget < 2 + len(self.more_items(n)):
            return None
        if numbers is None:
            parts = self._shown(n, entries, budget, depth, brackets)
        else:
            parts = self._shown_numbers(n, numbers, budget)
        if not parts and (self.style == "strict" or depth > 0):
            # An empty `[]` would claim the container is empty, and a nested `{…(+4)}` stub says nothing
            # the enclosing container's count does not: leave the item out instead.
            return None
        marker = self.more_items(n - len(parts)) if len(parts) < n else ""
        if marker:
            parts.append(marker)
        return open_ + ",".join(parts) + close

    def _shown(
        self, n: int, entries: Iterator[tuple[object, object]], budget: int, depth: int, brackets: str
    ) -> list[str]:
        """The renderings of the leading `entries` of a container of `n` that fit `budget` with its marker."""
        parts: list[str] = []
        used = 2
        # Every shown item costs at least one character and a comma, so this many entries are ever touched.
        for key, item in itertools.islice(entries, min(n, budget // 2)):
            shown = len(parts)
            separator = 1 if shown else 0
            marker = self.more_items(n - shown - 1) if shown + 1 < n else ""
            reserve = len(marker) + 1 if marker else 0
            avail = budget - used - separator - reserve
            if avail < 1:
                break
            share = max(avail // (n - shown), min(avail, max(_MIN_SHARE, avail // _HEAD_FRACTION)))
            piece = self._entry(key, item, share, depth) if brackets == "{}" else self.render(item, share, depth + 1)
            if piece is None:
                break
            parts.append(piece)
            used += len(piece) + separator
        return parts

    def _shown_numbers(self, n: int, numbers: list[str], budget: int) -> list[str]:
        """What `_shown` gives a list of `n` numbers whose leading items render as `numbers`. A share is never
        more than the room left nor less than `_MIN_SHARE` or that room, so a number of at most `_MIN_SHARE`
        characters fits its share exactly when it fits the room: no share is worked out, no item dispatched."""
        shown = 0
        reserve, floor = 0, n  # the marker's room, the same for every count of items left from `floor` up
        for taken in itertools.accumulate(map(len, numbers)):  # the first `shown + 1` numbers' characters
            left = n - shown - 1
            if left < floor:
                marker = self.more_items(left) if left else ""
                reserve = len(marker) + 1 if marker else 0
                floor = 10 ** (len(str(left)) - 1) if left else 0  # the marker grows with the count's digits
            # The brackets, the numbers, a comma before each but the first, and the marker.
            if 2 + taken + shown + reserve > budget:
                break
            shown += 1
        return numbers[:shown]

    def _entry(self, key: object, item: object, share: int, depth: int) -> str | None:
        key_json, named = self._key(key)
        # `hides` asks `is_sensitive_name` first: only a credential name is asked about its value.
        sensitive = named and self.redaction.hides(key, item)  # type: ignore[arg-type]
        if key_json is None or len(key_json) + 2 > share:
            return None
        room = share - len(key_json) - 1
        if sensitive and not isinstance(item, _Label):
            value_json = self.text(self.redaction.placeholder, room)
        elif isinstance(item, Unavailable):
            value_json = self.text(f"<unavailable: {item.error}>", room)
        else:
            value_json = self.render(item, room, depth + 1)
        return None if value_json is None else f"{key_json}:{value_json}"

    def _key(self, key: object) -> tuple[str | None, bool]:
        """`key` as an entry shows it, and whether it is a credential name."""
        known = self.known_keys.get(key) if type(key) is str else None  # an exact `str`: no user code runs
        if known is not None:
            return known
        named = False
        if isinstance(key, str):
            key_text, named = key, self.redaction.is_sensitive_name(key)
        elif key is None or isinstance(key, bool | int | float) and not isinstance(key, enum.Enum):
            key_text = json.dumps(key)  # the spelling json.dumps gives non-string keys: "1", "true", "null"
        else:
            key_text = bounded_repr(key, _MAX_KEY_CHARS)
        # A key is shown whole or not at all: a cut key (`"sco…"`) hides the shape of the data. Only a
        # key longer than any budget should allow is cut, at `_MAX_KEY_CHARS`.
        known = (self.text(key_text, _MAX_KEY_CHARS), named)
        if type(key) is str and len(key) <= _MAX_KEY_CHARS:
            if len(self.known_keys) >= _MAX_KNOWN_KEYS:
                self.known_keys.clear()
            self.known_keys[key] = known
        return known

    # --- arrays and frames (duck typed: numpy, pandas, torch, ... are never imported) ----------------

    def _array_like(self, value: object, shape: tuple[int, ...], budget: int, depth: int) -> str | None:
        if not shape:  # a 0-d array or a numpy scalar
            item = getattr(value, "item", None)
            return self.render(item() if callable(item) else safe_repr(value, budget), budget, depth + 1)
        cls = type(value)
        if hasattr(cls, "columns") and hasattr(cls, "iloc"):  # a DataFrame
            return self._frame(value, shape, budget, depth)
        if hasattr(cls, "iloc"):  # a Series
            masked = self._credential_positions(value)
            head = value.iloc[:_FRAME_ROWS].to_dict()  # type: ignore[attr-defined]
            summary: dict[str, object] = {"shape": list(shape), "dtype": str(getattr(value, "dtype", "?"))}
            if hasattr(cls, "isna") and None not in masked:
                summary["values"] = _Label(self._column(value, None))
            index = index_label(value.index) if hasattr(cls, "index") else None  # type: ignore[attr-defined]
            if index is not None:
                summary["index"] = _Label(index)
            summary["head"] = {readable_key(key): self._cell(cell, None in masked) for key, cell in head.items()}
        else:
            summary = {"shape": list(shape), "dtype": str(getattr(value, "dtype", "?"))}
            first = _constant(value)
            if first is not None:  # an array holding one value: said once
                summary["all"] = first
            else:
                summary["data"] = ArrayRows(value, shape[0])
        return self._container(len(summary), iter(summary.items()), budget, depth, "{}")

    def _frame(self, frame: object, shape: tuple[int, ...], budget: int, depth: int) -> str | None:
        """A DataFrame: its shape, a non-default index, then every column (up to `_FRAME_COLUMNS`) with its
        dtype and what it holds (`_tables.column_label`), then its first rows as plain lists (records would
        repeat every column name in every row). The columns are rendered first and the rows get what is left,
        so the first rows of a wide table never hide its columns."""
        small = frame.iloc[:_FRAME_ROWS, :_FRAME_COLUMNS]  # type: ignore[attr-defined]
        # A credential-named column shows its dtype; its cells are masked as the step's scrubber masks them.
        masked = self._credential_positions(frame)
        described = hasattr(type(frame), "isna")  # a real table: its columns can be described
        columns: dict[str, object] = {}
        for position, (column, dtype) in enumerate(small.dtypes.items()):
            label = str(dtype)
            # Under a credential name a column shows its dtype only: what it holds could be read as a credential.
            if described and position not in masked and not self.redaction.is_sensitive_name(str(column)):
                label = self._column(frame, position)
            columns[str(column)] = _Label(label)
        head: dict[str, object] = {"shape": list(shape)}
        index = index_label(frame.index) if described else None  # type: ignore[attr-defined]
        if index is not None:
            head["index"] = _Label(index)
        opening = self._container(len(head), iter(head.items()), budget, depth, "{}")
        if opening is None:
            return None
        left = budget - len(opening) - len(',"columns":,"rows":') - 1
        shown = self._container(len(frame.columns), iter(columns.items()), left, depth + 1, "{}")  # type: ignore[attr-defined]
        if shown is None:
            return opening
        rows = [
            [self._cell(cell, i in masked) for i, cell in enumerate(row)]
            for row in small.to_dict(orient="split")["data"]
        ]
        rendered = self.render(rows, left - len(shown), depth + 1)
        return opening[:-1] + ',"columns":' + shown + (',"rows":' + rendered if rendered else "") + "}"

    def _column(self, table: object, position: int | None) -> str:
        """The label of column `position` of a DataFrame (`None`: the Series `table` itself), made once."""
        key = (id(table), position)
        if key not in self.columns:
            column = table if position is None else table.iloc[:, position]  # type: ignore[attr-defined]
            self.columns[key] = column_label(column)
        return self.columns[key]

    def _credential_positions(self, table: object) -> set[int | None]:
        """The positions of the columns of `table` that hold credentials (`None`: the Series itself)."""
        if not self.redaction.enabled:
            return set()
        columns = credential_columns(table, self.redaction)
        return {column.position for column in columns if column.holds_credentials}

    def _cell(self, cell: object, credential: bool) -> object:
        """A table cell as shown: the placeholder for text that is not ordinary in a column that holds
        credentials (the cells the step's scrubber masks everywhere, so the preview and tool results agree)."""
        if credential and isinstance(cell, str) and not looks_ordinary(cell):
            return self.redaction.placeholder
        return readable_key(cell)


def _constant(array: object) -> object:
    """The one value a numeric array of `_MIN_REPEATS` items or more holds throughout, else `None`."""
    try:
        if getattr(array, "size", 0) < _MIN_REPEATS or getattr(getattr(array, "dtype", None), "kind", "") not in "iufb":
            return None
        flat = array.ravel()  # type: ignore[attr-defined]
        first = flat[0]
        # The leading items first: an array of different values is told from them without a full pass.
        return display_number(first) if bool((flat[:64] == first).all()) and bool((flat == first).all()) else None
    except Exception:  # an array type whose comparison is not elementwise
        return None


@functools.lru_cache(maxsize=16)
def _known_keys(style: JsonRendererStyle, redaction: ContextRedaction) -> dict[str, tuple[str | None, bool]]:
    """The string keys shown with `style` and `redaction`, as shown and whether each is a credential name: the
    walks of a value at shrinking budgets, and the steps of a map reading one dict, meet the same keys."""
    return {}


class _Label(str):
    """Text Nighthawk writes about a value (a column's dtype): shown even under a credential name."""


_NOT_SCALAR = object()


def render_value(
    value: object,
    *,
    max_tokens: int,
    style: JsonRendererStyle,
    counter: TokenCounter,
    redaction: ContextRedaction,
) -> str:
    """Render `value` as compact JSON-like text of at most about `max_tokens` tokens.

    Only as much of the value is read as the budget can show, so the cost does not depend on the size of
    the value. Sensitive keys, fields and attributes are masked, and every string is scrubbed.

    Args:
        value: Any Python object.
        max_tokens: Token budget of the result.
        style: `strict` (valid JSON), `default` (pseudo-JSON with `…`) or `detailed` (`/* N more */`).
        counter: Counts tokens to check the result against `max_tokens`.
        redaction: Masking rules.

    Returns:
        The rendering; deterministic for a given value (no memory addresses).

    Raises:
        ValueError: `max_tokens` is not positive or `style` is unknown.
    """
    if max_tokens < 1:
        raise ValueError(f"`max_tokens` must be a positive int, got {max_tokens!r}")
    if style not in _STYLES:
        raise ValueError(f"`style` must be one of {_STYLES}, got {style!r}")
    budget = max_tokens * _CHARS_PER_TOKEN
    text = ""
    columns: dict[tuple[int, int | None], str] = {}
    # The character budget is a guess at the token budget; measure and shrink a few times at most.
    for _ in range(4):
        walker = _Walker(style, redaction, columns)
        text = walker.render(value, budget, 0) or walker.elided()
        tokens = counter.count(text)
        if tokens <= max_tokens or budget <= 3:
            return text
        budget = max(3, min(budget - 1, budget * max_tokens * 9 // (tokens * 10)))
    return text
