"""The provider batches a map submitted, kept in its store file so that a run after this one re-attaches to them.

One row per batch: its id, the map that submitted it, its endpoint, the `custom_id`s of its lines, and how it
ended (empty while it runs). A batch that ended failed, expired or cancelled is not re-attached to: its lines
go out again in a new batch. And one row per intent: lines about to go out as a batch, kept until the batch's
id is recorded (or a later run learns that the provider made none), so a run interrupted while submitting
does not make the next one pay again. Rows are written from nighthawk's background loop and read on the caller's
thread, so one connection serves both under a lock. The file is made with the first row written: a map that
submits nothing (its model refused, nothing to send) leaves no file behind, nor does one whose only row was
the intent of a batch the provider refused (the file made for it is removed when the records close, if it
still holds nothing: no batch, no intent, no kept item).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..errors import NighthawkError

__all__ = ["BatchRecords", "Intent"]

_UNUSABLE = ("failed", "expired", "cancelled", "canceled")
"""How a batch can end without answering its lines."""


@dataclass(frozen=True)
class Intent:
    """Lines about to go out as one batch, recorded before the batch is made."""

    marker: str
    """Ours, unique: sent with the batch where the provider keeps metadata."""
    map_key: str
    endpoint: str
    custom_ids: tuple[str, ...]
    created: float
    """Seconds since the epoch, on this machine's clock."""

    @classmethod
    def new(cls, map_key: str, endpoint: str, custom_ids: list[str]) -> Intent:
        return cls(uuid.uuid4().hex, map_key, endpoint, tuple(custom_ids), time.time())


class BatchRecords:
    """The batches recorded in one store file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._by_line: dict[str, str] = {}
        self._lines: dict[str, frozenset[str]] = {}
        self._made = not self.path.exists()
        """Whether the file did not exist before these records (they may remove it again if it stays empty)."""
        if not self._made:
            self._open()

    def _open(self) -> sqlite3.Connection:
        """The connection, opened (and the file made) on first use."""
        if self._db is not None:
            return self._db
        try:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS batches (id TEXT PRIMARY KEY, map TEXT NOT NULL, endpoint TEXT NOT NULL, "
                "custom_ids TEXT NOT NULL, ended TEXT NOT NULL DEFAULT '', submitted REAL NOT NULL)"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS intents (marker TEXT PRIMARY KEY, map TEXT NOT NULL, endpoint TEXT NOT NULL, "
                "custom_ids TEXT NOT NULL, created REAL NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise NighthawkError(f"`store={str(self.path)!r}` cannot be opened as a sqlite file: {exc}") from exc
        for batch_id, custom_ids, ended in db.execute("SELECT id, custom_ids, ended FROM batches"):
            if ended not in _UNUSABLE:
                self._remember(batch_id, json.loads(custom_ids))
        self._db = db
        return db

    def _remember(self, batch_id: str, custom_ids: list[str]) -> None:
        self._lines[batch_id] = frozenset(custom_ids)
        for custom_id in custom_ids:
            self._by_line[custom_id] = batch_id

    def batch_of(self, custom_id: str) -> str | None:
        """The recorded batch holding this line, if one that can still answer it does."""
        with self._lock:
            return self._by_line.get(custom_id)

    def custom_ids(self, batch_id: str) -> frozenset[str]:
        with self._lock:
            return self._lines[batch_id]

    def intend(self, intent: Intent) -> None:
        """Lines are about to go out as one batch."""
        with self._lock:
            self._open().execute(
                "INSERT INTO intents (marker, map, endpoint, custom_ids, created) VALUES (?, ?, ?, ?, ?)",
                (intent.marker, intent.map_key, intent.endpoint, json.dumps(intent.custom_ids), intent.created),
            )

    def intents(self, map_key: str) -> list[Intent]:
        """This map's batches whose submission never heard back, oldest first."""
        with self._lock:
            if self._db is None:
                return []
            rows = self._db.execute(
                "SELECT marker, endpoint, custom_ids, created FROM intents WHERE map = ? ORDER BY created", (map_key,)
            ).fetchall()
        return [Intent(marker, map_key, endpoint, tuple(json.loads(ids)), created) for marker, endpoint, ids, created in rows]

    def settle(self, intent: Intent, batch_id: str | None) -> None:
        """The intent's batch is `batch_id` (recorded with its lines), or the provider made none (forgotten)."""
        with self._lock:
            db = self._open()
            db.execute("BEGIN IMMEDIATE")
            try:
                if batch_id is not None:
                    db.execute(
                        "INSERT OR REPLACE INTO batches (id, map, endpoint, custom_ids, ended, submitted) VALUES (?, ?, ?, ?, '', ?)",
                        (batch_id, intent.map_key, intent.endpoint, json.dumps(intent.custom_ids), intent.created),
                    )
                db.execute("DELETE FROM intents WHERE marker = ?", (intent.marker,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            if batch_id is not None:
                self._remember(batch_id, list(intent.custom_ids))

    def batch_ids(self) -> set[str]:
        """Every batch recorded, however it ended."""
        with self._lock:
            if self._db is None:
                return set()
            return {batch_id for (batch_id,) in self._db.execute("SELECT id FROM batches")}

    def ended(self, batch_id: str, status: str) -> None:
        """The batch ended `status`; one that answered nothing is forgotten by the runs after this one."""
        with self._lock:
            self._open().execute("UPDATE batches SET ended = ? WHERE id = ?", (status, batch_id))

    def running(self, map_key: str) -> list[str]:
        """Batches of this map not seen to end (not counting intents)."""
        with self._lock:
            if self._db is None:
                return []
            rows = self._db.execute("SELECT id FROM batches WHERE map = ? AND ended = '' ORDER BY submitted", (map_key,))
            return [batch_id for (batch_id,) in rows]

    def close(self) -> None:
        with self._lock:
            if self._db is None:
                return
            db, self._db = self._db, None
            try:
                if self._made and self._emptied_alone(db):
                    # Removed while the write lock is held: no other process is writing to it meanwhile.
                    for suffix in ("", "-wal", "-shm"):
                        Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            finally:
                db.close()

    @classmethod
    def _emptied_alone(cls, db: sqlite3.Connection) -> bool:
        """Whether the file holds nothing, checked under its write lock, taken at once or not at all: another
        process (a second kernel on the same store) that is writing to it keeps the file where it is."""
        db.execute("PRAGMA busy_timeout = 0")
        try:
            db.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError:  # another connection holds a lock: the file is in use
            return False
        return cls._holds_nothing(db)

    @staticmethod
    def _holds_nothing(db: sqlite3.Connection) -> bool:
        """Whether the store holds no batch, no intent and no kept item (the map's items share the file)."""
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return not any(db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() for table in tables)
