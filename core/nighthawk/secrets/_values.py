"""Finding the secret values inside a step's data: the strings under credential names, `SecretStr`s, and
credential-shaped text, in dicts, sequences, dataclasses and pydantic models, and the leading cells of a
table's credential-named columns when they look like credentials.

Only data containers are entered, never an arbitrary object's attributes, a module or a class, and no user
code runs but the `__iter__` of builtin containers. Each look is breadth first and bounded, so a huge table
costs a bounded time and a secret near the top (a key of a config dict, a field of a settings model) is
found first.
"""

from __future__ import annotations

import dataclasses
import re
from collections import ChainMap, UserDict, deque
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from itertools import islice
from types import BuiltinFunctionType, FunctionType, MappingProxyType, MethodType, ModuleType

from . import (
    DEFAULT_MASK_VALUE_PATTERNS,
    SHORTEST_SECRET_CHARS,
    ContextRedaction,
    basic_credentials,
    looks_ordinary,
    may_hold_credential,
    percent_decoded,
)

__all__ = [
    "CredentialColumn",
    "collect_into",
    "collect_secret_values",
    "credential_cells",
    "credential_columns",
    "field_names",
    "is_table",
]

_MAX_NODES = 1_000
# The leading cells of each credential-named column looked at (of at most this many columns), and the most
# a table adds to a step's secret values. A step masks at most 256 values (`_scrubber`), each at a cost in
# every text sent: one table must neither cost a step tens of milliseconds nor leave no room for a secret
# met later in the step.
_MAX_TABLE_CELLS = 64
_MAX_TABLE_COLUMNS = 16
_MAX_DEPTH = 8
# Strings longer than this are neither collected nor searched for credential shapes while collecting (they
# are still scrubbed by shape wherever they are sent; a PEM key, the longest credential, is ~3,300 chars).
_MAX_SCANNED_CHARS = 8_192
# The password of `scheme://user:password@host` (up to the last `@`: it may hold one), so that
# `urlparse(dsn).password` is masked on its own too.
_URL_PASSWORD = re.compile(r"://[^/\s:@]*:([^/\s?#'\"\\`]+)@")


@lru_cache(maxsize=256)
def field_names(cls: type) -> tuple[str, ...]:
    """The field names of dataclass `cls`."""
    return tuple(item.name for item in dataclasses.fields(cls))


def _is_pydantic_model(value: object) -> bool:
    return hasattr(type(value), "model_fields") and hasattr(value, "__dict__")


def _children(value: object) -> Iterator[tuple[str | None, object]]:
    """(name, child) pairs of a data value: dict and standard mapping items, named tuple fields (named),
    sequence items, dataclass and pydantic fields, and the attributes an object keeps in its own dictionary
    (what a rendering of it shows).

    Not entered: modules, classes, functions; no user code runs but the `__iter__` of builtin containers
    (an object's dictionary is read past its class's `__getattribute__`).
    """
    if isinstance(value, dict):
        yield from _items(value)
    elif isinstance(value, tuple) and isinstance(fields := getattr(type(value), "_fields", None), tuple):
        yield from zip(fields, value)  # a named tuple: its field names say what it holds
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield None, item
    elif isinstance(value, UserDict):
        yield from _items(value.data)
    elif isinstance(value, ChainMap):
        for mapping in value.maps:
            if isinstance(mapping, dict):
                yield from _items(mapping)
    elif isinstance(value, MappingProxyType):
        yield from _items(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for name in field_names(type(value)):
            yield name, getattr(value, name, None)
    elif _is_pydantic_model(value):
        # Pydantic keeps a model's field values in its instance dictionary: no property runs.
        fields = type(value).model_fields  # type: ignore[attr-defined]
        yield from ((name, item) for name, item in vars(value).items() if name in fields)
    elif not isinstance(value, _NOT_ENTERED):
        attributes = object.__getattribute__(value, "__dict__")  # AttributeError: none (slots, C objects)
        if type(attributes) is dict:
            yield from _items(attributes)


def _items(mapping: Mapping[object, object]) -> Iterator[tuple[str | None, object]]:
    for key, item in mapping.items():
        yield (key if isinstance(key, str) else None), item


_NOT_ENTERED = (ModuleType, type, FunctionType, BuiltinFunctionType, MethodType)
"""Objects whose dictionary is code, not data."""


# Values that hold no text: never queued, so a list of a million numbers costs one slice of the budget's
# size, and the budget goes to values that can hold a secret.
_PLAIN = frozenset({int, float, complex, bool, type(None)})
_TEXTS = (str, bytes)
# The verdicts of `_no_credential_in` on the texts of recently read containers, by the container's id: the
# steps of a map read the same table again and again. A verdict is reused only for the very same texts
# (the lists compare item by item, by identity first), so a container changed in place is tested again and
# an id reused by another container is harmless. The texts are kept alive meanwhile: at most
# `_MAX_VERDICTS` lists of at most `_MAX_NODES` texts of at most `_MAX_SCANNED_CHARS` each.
_verdicts: dict[int, tuple[list[str], bool]] = {}
_MAX_VERDICTS = 8


def _searchable(child: object) -> bool:
    """Whether a look can find anything in `child`: not a number, nor a text too short to be masked
    everywhere or too long to be searched (`collect_into` skips those whatever their name)."""
    kind = type(child)
    if kind in _TEXTS:
        return SHORTEST_SECRET_CHARS <= len(child) <= _MAX_SCANNED_CHARS  # type: ignore[arg-type]
    return kind not in _PLAIN


def _data_children(
    value: object, room: int, redaction: ContextRedaction, sensitive: bool
) -> Iterator[tuple[str | None, object]]:
    """The first `room` children of `value` (see `_children`) but those a look can find nothing in (see
    `_searchable`), and, in a list, tuple, set or dict not under a credential name, texts that can hold no
    credential (but under a credential key)."""
    kind = type(value)
    if kind in (list, tuple, set, frozenset):
        # A slice is taken in C; children are otherwise taken lazily, never by copying a big container.
        sliced = kind in (list, tuple)
        head = value[:room] if sliced else list(islice(value, room))  # type: ignore[index, call-overload]
        kinds = set(map(type, head))
        if kinds <= _PLAIN:
            return iter(())  # numbers only, told in one pass in C: a million readings cost a slice
        if kinds == {str} and min(map(len, head)) >= SHORTEST_SECRET_CHARS and max(map(len, head)) <= _MAX_SCANNED_CHARS:
            children = texts = list(head)  # searchable texts only, told in C (a column of sentences)
        else:
            children = [child for child in head if _searchable(child)]
            texts = [child for child in children if type(child) is str]
        if not sensitive and _no_credential_in(value, texts, redaction):
            children = [] if children is texts else [child for child in children if type(child) is not str]
        return ((None, child) for child in children)
    if kind is dict:
        if set(map(type, islice(value.values(), room))) <= _PLAIN:  # type: ignore[attr-defined]
            return iter(())
        pairs = [
            ((key if isinstance(key, str) else None), item)
            for key, item in islice(value.items(), room)  # type: ignore[attr-defined]
            if _searchable(item)
        ]
        if not sensitive and _no_credential_in(value, [item for _, item in pairs if type(item) is str], redaction):
            # A text under a credential key is a secret by its name: it stays.
            pairs = [
                (key, item)
                for key, item in pairs
                if type(item) is not str or (key is not None and redaction.is_sensitive_name(key))
            ]
        return iter(pairs)
    return ((name, child) for name, child in islice(_children(value), room) if _searchable(child))


def _no_credential_in(owner: object, texts: list[str], redaction: ContextRedaction) -> bool:
    """Whether none of `texts` (those of container `owner`, exact `str`s) can hold a credential, tested on all
    of them at once.

    A text not under a credential name is a secret only by its shape, and with the default rules every
    shape needs what `may_hold_credential` looks for; a line break between the texts joins no two into one.
    A list of a thousand sentences then costs one test, not a thousand, and none while it is unchanged.
    """
    if redaction.mask_value_patterns is not DEFAULT_MASK_VALUE_PATTERNS or not texts:
        return False
    known = _verdicts.get(id(owner))
    if known is not None and known[0] == texts:  # exact `str`s only: comparing them runs no user code
        return known[1]
    verdict = not may_hold_credential("\n".join(texts))
    if len(_verdicts) >= _MAX_VERDICTS:
        _verdicts.clear()
    _verdicts[id(owner)] = (texts, verdict)
    return verdict


def is_table(value: object) -> bool:
    """Whether `value` is a pandas-like DataFrame or Series (duck typed: pandas is never imported)."""
    cls = type(value)
    return hasattr(cls, "iloc") and hasattr(cls, "shape") and not isinstance(value, type)


@dataclasses.dataclass(frozen=True)
class CredentialColumn:
    """A credential-named column of a table and its leading cells."""

    position: int | None
    """Its position among the table's columns; `None` for a Series (the column is the Series itself)."""
    name: object
    cells: list[object]
    """At most `_MAX_TABLE_CELLS` leading cells."""

    @property
    def holds_credentials(self) -> bool:
        """Whether its cells look like credentials: more than a quarter of its text leading cells are not
        ordinary.

        A `token` column of words (`The`, `quick`, `brown-fox`) or a `session_id` column of serial ids is
        data; a `password` column of passwords is not, though some of its passwords are plain words.
        """
        texts = [cell for cell in self.cells if isinstance(cell, str)]
        return 4 * sum(not looks_ordinary(text) for text in texts) > len(texts)


def credential_columns(table: object, redaction: ContextRedaction, sensitive: bool = False) -> list[CredentialColumn]:
    """The credential-named columns of `table` (all of them when `sensitive`, the table being under a
    credential name; a Series is one column named by its `.name`), with their leading cells.

    Only the names of the other columns are read, so a big table costs the same whatever they hold. At
    most `_MAX_TABLE_COLUMNS` columns are taken.
    """
    if hasattr(type(table), "columns"):
        named = islice(enumerate(table.columns), _MAX_NODES)  # type: ignore[attr-defined]
        chosen = [(i, name) for i, name in named if sensitive or _credential_label(name, redaction)]
        return [
            CredentialColumn(i, name, table.iloc[:_MAX_TABLE_CELLS, i].tolist())  # type: ignore[attr-defined]
            for i, name in chosen[:_MAX_TABLE_COLUMNS]
        ]
    name = getattr(table, "name", None)
    if sensitive or _credential_label(name, redaction):
        return [CredentialColumn(None, name, table.iloc[:_MAX_TABLE_CELLS].tolist())]  # type: ignore[attr-defined]
    return []


def _credential_label(name: object, redaction: ContextRedaction) -> bool:
    """Whether a column or index name is a credential name; of a multi-level name (`("creds", "password")`),
    any of its levels."""
    if isinstance(name, tuple):
        return any(isinstance(part, str) and redaction.is_sensitive_name(part) for part in name)
    return isinstance(name, str) and redaction.is_sensitive_name(name)


def _index_cells(table: object, redaction: ContextRedaction, sensitive: bool) -> list[object]:
    """The leading labels of a table's index when the index is named like a credential
    (`df.set_index("password")`) and its labels look like credentials."""
    index = getattr(table, "index", None)
    names = getattr(index, "names", None) or ()
    if not (sensitive or any(_credential_label(name, redaction) for name in names)):
        return []
    column = CredentialColumn(None, tuple(names), list(index[:_MAX_TABLE_CELLS]))  # type: ignore[index]
    texts = [part for label in column.cells for part in (label if isinstance(label, tuple) else (label,))]
    return texts if CredentialColumn(None, column.name, texts).holds_credentials else []


def _container_cells(table: object) -> list[object]:
    """The leading cells of a table's columns of objects that are containers (a column of dicts), which the
    look enters like any value: a credential-named key inside a cell names the value under it."""
    dtypes = getattr(table, "dtypes", None)
    if dtypes is None:  # a Series
        columns = [table.iloc[:_MAX_CONTAINER_CELLS]] if str(getattr(table, "dtype", "")) == "object" else []  # type: ignore[attr-defined]
    else:
        positions = [i for i, dtype in enumerate(dtypes.iloc[:_MAX_NODES]) if str(dtype) == "object"][:_MAX_TABLE_COLUMNS]
        columns = [table.iloc[:_MAX_CONTAINER_CELLS, i] for i in positions]  # type: ignore[attr-defined]
    return [cell for column in columns for cell in column.tolist() if isinstance(cell, (dict, list, tuple))]


_MAX_CONTAINER_CELLS = 16


def credential_cells(table: object, redaction: ContextRedaction, sensitive: bool = False) -> list[object]:
    """The leading cells of the columns of `table` that hold credentials (see `credential_columns`), at most
    `_MAX_TABLE_CELLS` in all."""
    columns = credential_columns(table, redaction, sensitive)
    cells = [cell for column in columns if column.holds_credentials for cell in column.cells]
    return (cells + _index_cells(table, redaction, sensitive))[:_MAX_TABLE_CELLS]


def _secret_text(value: object) -> str | None:
    """The text of a value that is secret whatever its name (pydantic's `SecretStr` and `SecretBytes`)."""
    if type(value).__name__ in ("SecretStr", "SecretBytes") and hasattr(value, "get_secret_value"):
        secret = value.get_secret_value()
        return secret.decode("utf-8", "replace") if isinstance(secret, bytes) else str(secret)
    return None


def collect_secret_values(
    roots: Iterable[tuple[str | None, object]], redaction: ContextRedaction, *, secret: bool = False
) -> frozenset[str]:
    """The secret texts inside `roots`, a sequence of (name, value) pairs.

    A string is secret when a credential name is on its path (`config["db"]["password"]`, every string under
    `credentials = {...}`) and it is not ordinary text, when it is a `SecretStr`, or, for a part of it, when
    it has a credential shape or is the password of a URL. With `secret`, the roots themselves are under a
    credential name.
    """
    found: set[str] = set()
    collect_into(roots, redaction, found, set(), secret=secret)
    return frozenset(found)


def collect_into(
    roots: Iterable[tuple[str | None, object]],
    redaction: ContextRedaction,
    found: set[str],
    looked_at: set[int],
    *,
    secret: bool = False,
) -> None:
    if not redaction.enabled:
        return
    queue: deque[tuple[str | None, object, int, bool]] = deque((name, value, 0, secret) for name, value in roots)
    visited = 0
    while queue and visited < _MAX_NODES:
        name, value, depth, inherited = queue.popleft()
        visited += 1
        sensitive = inherited or (name is not None and redaction.is_sensitive_name(name))
        if isinstance(value, (str, bytes)):
            if not SHORTEST_SECRET_CHARS <= len(value) <= _MAX_SCANNED_CHARS:
                continue  # too short to mask everywhere; a long text is data (its credential shapes still go)
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            if sensitive and not looks_ordinary(text):
                found.add(text)
            elif (key := id(value) * 2) not in looked_at:
                looked_at.add(key)  # the same text repeated down a column is searched once
                found.update(_shaped_parts(text, redaction))
            continue
        special = _secret_text(value)
        if special is not None:
            if len(special) >= SHORTEST_SECRET_CHARS:
                found.add(special)
            continue
        # A container met under a credential name is looked at again even if it was seen innocently.
        key = id(value) * 2 + sensitive
        if value is None or depth >= _MAX_DEPTH or key in looked_at:
            continue
        looked_at.add(key)
        room = _MAX_NODES - visited - len(queue)
        if room <= 0:
            continue
        try:
            if is_table(value):
                queue.extend((None, cell, depth + 1, True) for cell in credential_cells(value, redaction, sensitive)[:room])
                queue.extend((None, cell, depth + 1, sensitive) for cell in _container_cells(value)[: max(room - len(queue), 0)])
                continue
            children = _data_children(value, room, redaction, sensitive)
            queue.extend((child_name, child, depth + 1, sensitive) for child_name, child in children)
        except Exception:  # an odd object (a proxy, a container changed meanwhile) is skipped, never fatal
            continue


def _shaped_parts(text: str, redaction: ContextRedaction) -> Iterator[str]:
    """The credential-shaped substrings of `text`, and URL passwords on their own."""
    for part in redaction.credential_parts(text):
        yield from (form for form in _decoded_forms(part) if len(form) >= SHORTEST_SECRET_CHARS)
    if "://" in text:
        yield from (match.group(1) for match in _URL_PASSWORD.finditer(text) if len(match.group(1)) >= SHORTEST_SECRET_CHARS)


_QUOTES = ('""', "''", "{}")


def _decoded_forms(part: str) -> Iterator[str]:
    """`part` and what a program gets from it in one call: the value inside a connection string's quotes
    or braces, its percent-decoded text (a URL's query), and the `user:password` of a `Basic` token with
    the password alone, and the signature of a token in three dotted parts (a JWT, a Discord bot token),
    which `split('.')` gives and which is its secret part."""
    yield part
    if part.count(".") == 2 and " " not in part:
        yield part.rsplit(".", 1)[1]
    if len(part) >= 2 and part[0] + part[-1] in _QUOTES:
        part = part[1:-1]
        yield part
    if (decoded := percent_decoded(part)) != part:
        yield decoded
    if (credentials := basic_credentials(part)) is not None:
        yield credentials
        yield credentials.partition(":")[2]
