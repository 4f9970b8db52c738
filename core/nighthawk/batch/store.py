"""Where a map keeps finished items: this session's memory, and optionally a sqlite file.

Items are kept under the keys `keys.item_key` makes (a hash of everything that decides an answer). A value
in memory is the object itself; on disk it is JSON made by pydantic from the function's return annotation
(never pickle), read back through the same annotation. The file is in WAL mode and every item is its own transaction, so two
processes (or two kernels) writing one store lose nothing. A store file is made with the first item kept: a map
that keeps nothing (refused, interrupted before any item finished) leaves no file behind.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import typing
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import NighthawkError
from .twin import natural_runtime

__all__ = ["MISSING", "DiskStore", "SessionStore", "return_type", "session_store"]

MISSING = object()
"""What a store returns for a key it does not hold (`None` is a valid result)."""


# --- the type kept ----------------------------------------------------------------------------------


def return_type(function: Callable[..., Any]) -> object:
    """What a call of `function` returns, as its annotation says (`Any` when it says nothing)."""
    plain = getattr(function, "__func__", function)
    runtime = natural_runtime(plain)
    if runtime is not None:
        return runtime._declared_types()[1]
    try:
        return typing.get_type_hints(plain).get("return", Any)
    except Exception:  # an unresolvable annotation: store what JSON can hold
        return Any


# --- stores -----------------------------------------------------------------------------------------


class SessionStore:
    """Finished items of this process's maps, the most recent `limit` of them."""

    def __init__(self, limit: int = 200_000) -> None:
        self._values: OrderedDict[str, tuple[object, tuple[object, ...], float | None]] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, key: str) -> object:
        with self._lock:
            entry = self._values.get(key)
            if entry is None:
                return MISSING
            self._values.move_to_end(key)
            return entry[0]

    def paid(self, key: str) -> float | None:
        """What the item kept under `key` cost when it ran (`None`: unknown, or not kept)."""
        with self._lock:
            entry = self._values.get(key)
            return None if entry is None else entry[2]

    def put(self, key: str, value: object, anchors: tuple[object, ...] = (), cost_usd: float | None = None) -> None:
        """Keep `value`, which cost `cost_usd` to make; `anchors` (the arguments its key names by identity) stay
        alive with it."""
        with self._lock:
            self._values[key] = (value, anchors, cost_usd)
            self._values.move_to_end(key)
            while len(self._values) > self._limit:
                self._values.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


_SESSION = SessionStore()


def session_store() -> SessionStore:
    """The process-wide store every map reads first."""
    return _SESSION


_OPEN_TIMEOUT_S = 30.0


def _open(path: Path) -> sqlite3.Connection:
    """A connection to the store file at `path`, in WAL mode with its table made; closed again on failure."""
    db = sqlite3.connect(path, timeout=_OPEN_TIMEOUT_S, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"CREATE TABLE IF NOT EXISTS items ({_COLUMNS})")
        # What each item cost when it ran, beside the items (whose shape older stores share).
        db.execute("CREATE TABLE IF NOT EXISTS costs (key TEXT PRIMARY KEY, cost_usd REAL)")
        _check_table(db, path)
    except BaseException:
        db.close()
        raise
    return db


_COLUMNS = "key TEXT PRIMARY KEY, value TEXT NOT NULL, stored REAL NOT NULL"
_SHAPE = [("key", "TEXT", 1), ("value", "TEXT", 0), ("stored", "REAL", 0)]
"""Each column of the `items` table as `PRAGMA table_info` reports it: name, type, place in the primary key."""


def _check_table(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a file whose `items` is not the store's table (another program's, or a view): reading or
    writing it would fail only after the first item had paid for its model calls."""
    (kind,) = db.execute("SELECT type FROM sqlite_master WHERE name = 'items'").fetchone()
    shape = [(name, kind_of.upper(), key) for _, name, kind_of, _, _, key in db.execute("PRAGMA table_info(items)")]
    if kind == "table" and shape == _SHAPE:
        return
    found = f"a {kind}" if kind != "table" else "a table with the columns " + ", ".join(
        f"{name} {kind_of}" + (" PRIMARY KEY" if key else "") for name, kind_of, key in shape
    )
    raise NighthawkError(
        f"`store={str(path)!r}` is not a nighthawk map store: its `items` is {found}, where a store has a table "
        f"`items ({_COLUMNS})`. Give `store=` a file of its own (a new name makes a new store)"
    )


class DiskStore:
    """Finished items in a sqlite file, as JSON through the function's return annotation; a file that does not
    exist yet is made with the first item kept."""

    def __init__(self, path: str | Path, annotation: object) -> None:
        import pydantic

        self.path = Path(path)
        self._adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(annotation)
        self._annotation = annotation
        if not self.path.exists() and not self.path.parent.is_dir():  # told now, not once the first item has paid
            raise NighthawkError(f"`store={str(path)!r}` cannot be made: its folder {str(self.path.parent)!r} does not exist")
        self._db: sqlite3.Connection | None = self._connect() if self.path.exists() else None

    def _connect(self) -> sqlite3.Connection:
        # Two processes opening a new file at once can be told "database is locked" at once, busy timeout or
        # not (switching a file to WAL takes a lock sqlite will not wait for): the loser tries again.
        give_up = time.monotonic() + _OPEN_TIMEOUT_S
        while True:
            try:
                return _open(self.path)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > give_up:
                    raise NighthawkError(f"`store={str(self.path)!r}` cannot be opened as a sqlite file: {exc}") from exc
                time.sleep(0.05)
            except sqlite3.Error as exc:  # not a database at all
                raise NighthawkError(f"`store={str(self.path)!r}` cannot be opened as a sqlite file: {exc}") from exc

    def get(self, key: str) -> object:
        import pydantic

        if self._db is None:
            return MISSING
        row = self._db.execute("SELECT value FROM items WHERE key = ?", (key,)).fetchone()
        if row is None:
            return MISSING
        try:
            return self._adapter.validate_json(row[0])
        except pydantic.ValidationError:  # the return type changed shape since: run the item again
            return MISSING

    def paid(self, key: str) -> float | None:
        """What the item kept under `key` cost when it ran (`None`: unknown, an unpriced model's, or not kept)."""
        if self._db is None:
            return None
        row = self._db.execute("SELECT cost_usd FROM costs WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, value: object, cost_usd: float | None = None) -> None:
        """Keep `value`, which cost `cost_usd` to make."""
        import pydantic_core

        try:
            text = self._adapter.dump_json(value).decode()
        except (pydantic_core.PydanticSerializationError, ValueError, TypeError) as exc:
            shown = getattr(self._annotation, "__name__", repr(self._annotation))
            raise NighthawkError(
                f"a result of type {type(value).__name__} cannot be kept in `store={str(self.path)!r}` as JSON "
                f"through the return annotation {shown}: {exc}. Annotate the function's return with a type "
                "pydantic can serialise (a dataclass, a pydantic model, builtins), or leave `store` unset"
            ) from exc
        if self._db is None:
            self._db = self._connect()
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("INSERT OR REPLACE INTO items (key, value, stored) VALUES (?, ?, ?)", (key, text, time.time()))
            self._db.execute("INSERT OR REPLACE INTO costs (key, cost_usd) VALUES (?, ?)", (key, cost_usd))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
