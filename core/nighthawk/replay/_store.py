"""`ReplayStore`: a replay store file indexed in memory, appended to under a file lock, compacted on demand."""

from __future__ import annotations

import functools
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: recorders there do not lock
    fcntl = None  # type: ignore[assignment]

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import ModelRequestParameters

from ..errors import NighthawkError
from ..secrets import ContextRedaction
from ._canonical import RESPONSE_DROPPED_KEYS, canonical_with_ids, clean, round_of
from ._format import (
    HEADER,
    FORMAT_VERSION,
    Exchange,
    appendable,
    check_document,
    entry_exchange,
    library_versions,
    share,
)
from ._match import nearest_exchange
from ._yaml import load_document, yaml_part

__all__ = ["ReplayStore"]

_COMPACT_SLACK = 16
"""Superseded entries allowed beyond the live ones before recording compacts the file."""


class ReplayStore:
    """A YAML file of model exchanges: indexed in memory, appended to under a lock, compacted on demand.

    One store per notebook or test module is the intended granularity. Recording appends the new entry to
    the end of the file under an exclusive `flock` (so concurrent recorders never lose each other's entries)
    instead of rewriting it; a later entry for the same request wins. `compact()` rewrites the file with the
    entries sorted by block, round and request digest, shared parts once and superseded entries dropped, so
    recording the same program twice in any order gives the same bytes; it also runs by itself when
    superseded entries pile up, so the cost per exchange stays constant.
    """

    def __init__(self, path: str | os.PathLike[str], *, redaction: ContextRedaction | None = None) -> None:
        """Open the store at `path` (read on first use); a missing or empty file is an empty store.

        Args:
            path: The store file, conventionally `<notebook or module>.replay.yaml`.
            redaction: Masking applied to everything stored; defaults to `ContextRedaction()`.
        """
        self.path = Path(path)
        self.redaction = redaction or ContextRedaction()
        self._lock = threading.Lock()
        self._exchanges: dict[str, Exchange] | None = None
        self._positions: dict[str, int] = {}
        """Digest -> position of the entry in the file's `exchanges` list (from 1), for error messages."""
        self._shared: set[str] = set()
        """Shared references the file defines, so an appended entry repeats only what is new."""
        self._entries = 0
        """Entries in the file, superseded ones included."""
        self._appendable = False
        """Whether the file ends with its `exchanges` list, so an entry can be appended as text."""
        self._seen: tuple[int, int, int] | None = None
        """Inode, modification time and size of the file when this object last read or wrote it."""

    def __repr__(self) -> str:
        return f"ReplayStore({str(self.path)!r})"

    # -- reading ------------------------------------------------------------------------------------

    def _load(self) -> dict[str, Exchange]:
        if self._exchanges is None:
            self._read()
        assert self._exchanges is not None
        return self._exchanges

    def check_readable(self) -> None:
        """Fail now, before any model is paid for, if the file exists but is not a valid store.

        Raises:
            NighthawkError: The file cannot be read or holds something other than a replay store.
        """
        if self.path.exists():
            self._load()

    def _fail(
        self,
        problem: str,
        exc: BaseException | None = None,
        *,
        action: str = "read",
        advice: str = "Fix the file, or delete it and record again",
    ) -> NighthawkError:
        error = NighthawkError(f"cannot {action} the replay store {str(self.path)!r}: {problem}. {advice}")
        error.__cause__ = exc
        return error

    def _read(self) -> None:
        """(Re)build the index from the file, under a shared lock so no half-appended entry is seen."""
        if self.path.is_dir():
            raise self._fail("it is a directory, not a file")
        try:
            with _locked(self.path, exclusive=False) as handle:
                if handle is None:
                    self._index("", None)
                else:
                    self._read_locked(handle)
        except OSError as exc:
            raise self._fail(exc.strerror or str(exc), exc) from exc

    def _read_locked(self, handle: BinaryIO) -> None:
        handle.seek(0)
        try:
            text = handle.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail(f"it is not UTF-8 text ({exc.reason} at byte {exc.start})", exc) from exc
        self._index(text, _fd_stamp(handle))

    def _index(self, text: str, stamp: tuple[int, int, int] | None) -> None:
        data = load_document(text, self._fail)
        entries: list[Any] = []
        shared: dict[str, Any] = {}
        if data is not None:
            check_document(data, self._fail)
            entries = data.get("exchanges") or []
            shared.update(data.get("shared") or {})
            for entry in entries:  # an appended entry carries the shared parts that were new when it was written
                if isinstance(entry, dict) and isinstance(entry.get("shared"), dict):
                    shared.update(entry["shared"])
        exchanges: dict[str, Exchange] = {}
        positions: dict[str, int] = {}
        for position, entry in enumerate(entries, start=1):
            exchange = entry_exchange(entry, shared, position, self._fail)
            exchanges[exchange.digest] = exchange  # a later entry for the same request wins
            positions[exchange.digest] = position
        self._exchanges, self._positions, self._shared, self._seen = exchanges, positions, set(shared), stamp
        self._entries = len(entries)
        self._appendable = appendable(text)

    @property
    def exchanges(self) -> tuple[Exchange, ...]:
        """Every stored exchange, sorted by block, round and digest."""
        with self._lock:
            return tuple(sorted(self._load().values(), key=Exchange._sort_key))

    def __len__(self) -> int:
        with self._lock:
            return len(self._load())

    def find(self, digest: str) -> Exchange | None:
        """The exchange whose request has `digest`, if any."""
        with self._lock:
            return self._load().get(digest)

    def response_for(self, exchange: Exchange) -> ModelResponse:
        """`exchange.model_response()`, failing with the entry named when a hand edit broke its shape."""
        try:
            return exchange.model_response()
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            summary = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            position = self._positions.get(exchange.digest, "?")
            raise self._fail(
                f"exchange {position} (block {exchange.block!r}, round {exchange.round}) has a `response` that "
                f"is not a model response: {summary}",
                exc,
            ) from exc

    # -- writing ------------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Fail now, before any model is paid for, if recording could not write the file.

        Raises:
            NighthawkError: The path is a directory, or the file or its folder cannot be written.
        """
        refuse = functools.partial(self._fail, action="record to", advice="Choose a file in a folder you can write")

        if self.path.is_dir():
            raise refuse("it is a directory")
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise refuse(f"cannot create the folder {str(folder)!r} ({exc.strerror or exc})", exc) from exc
        if self.path.exists():
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_APPEND))
            except OSError as exc:
                raise refuse(f"cannot open it for writing ({exc.strerror or exc})", exc) from exc
            return
        try:  # probe the folder without leaving an empty store behind
            handle, probe = tempfile.mkstemp(dir=folder, prefix=f".{self.path.name}.", suffix=".probe")
        except OSError as exc:
            raise refuse(f"cannot create a file in {str(folder)!r} ({exc.strerror or exc})", exc) from exc
        os.close(handle)
        os.unlink(probe)

    def add(self, exchange: Exchange) -> None:
        """Store `exchange`; a later entry for the same request wins. Appends to the file, under a lock."""
        with self._lock:
            if self.path.is_dir():
                raise self._fail("it is a directory, not a file")
            with _locked(self.path, exclusive=True) as handle:
                assert handle is not None
                if self._exchanges is None or _fd_stamp(handle) != self._seen:
                    self._read_locked(handle)  # first write, or someone else wrote: learn their entries
                assert self._exchanges is not None
                self._exchanges[exchange.digest] = exchange
                empty = _fd_stamp(handle)[2] == 0
                superseded = self._entries + 1 - len(self._exchanges)
                if (self._appendable or empty) and superseded <= len(self._exchanges) + _COMPACT_SLACK:
                    self._append_locked(handle, exchange, skeleton=empty)
                else:
                    self._compact_locked()

    def compact(self) -> None:
        """Rewrite the file: entries sorted by block, round and digest, shared parts once, superseded ones gone.

        Recording the same program twice then gives the same bytes, whatever the order of recording.
        """
        with self._lock:
            if not self.path.is_file():
                return
            with _locked(self.path, exclusive=True) as handle:
                assert handle is not None
                if self._exchanges is None or _fd_stamp(handle) != self._seen:
                    self._read_locked(handle)
                self._compact_locked()

    def _append_locked(self, handle: BinaryIO, exchange: Exchange, *, skeleton: bool) -> None:
        shared: dict[str, Any] = {}
        entry = exchange._as_yaml()
        entry["request"] = share(entry["request"], shared)
        new_shared = {key: value for key, value in sorted(shared.items()) if key not in self._shared}
        if new_shared:
            entry["shared"] = new_shared
        text = yaml_part([entry])
        if skeleton:
            text = f"{HEADER}format: {FORMAT_VERSION}\nexchanges:\n{text}"
        else:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                text = "\n" + text
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        data = memoryview(text.encode("utf-8"))
        try:
            while data:  # the file is opened with O_APPEND: every write lands at the end; a write may be short
                data = data[os.write(fd, data) :]
        except OSError as exc:  # a full disk, say: never leave half an entry behind
            os.ftruncate(fd, size)
            raise NighthawkError(f"cannot record to the replay store {str(self.path)!r}: {exc.strerror or exc}") from exc
        self._shared.update(shared)
        self._entries += 1
        self._positions[exchange.digest] = self._entries
        self._appendable = True
        self._seen = _fd_stamp(handle)

    def _compact_locked(self) -> None:
        assert self._exchanges is not None
        shared: dict[str, Any] = {}
        entries = []
        ordered = sorted(self._exchanges.values(), key=Exchange._sort_key)
        for exchange in ordered:
            entry = exchange._as_yaml()
            entry["request"] = share(entry["request"], shared)
            entries.append(entry)
        head = yaml_part({"format": FORMAT_VERSION, "shared": dict(sorted(shared.items()))})
        # `exchanges` comes last, as a block list, so later entries can be appended to the file as text.
        text = HEADER + head + ("exchanges:\n" + yaml_part(entries) if entries else "exchanges: []\n")
        # Write beside the file and rename while holding the lock on the old file: a reader never sees half a
        # store, and a recorder waiting for the lock notices the new file and appends to that one.
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as file:
                file.write(text)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self._shared = set(shared)
        self._entries = len(entries)
        self._positions = {exchange.digest: position for position, exchange in enumerate(ordered, start=1)}
        self._appendable = bool(entries)
        stat = self.path.stat()
        self._seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def record_exchange(
        self,
        messages: Sequence[ModelMessage],
        response: ModelResponse,
        *,
        model_request_parameters: ModelRequestParameters,
        model_settings: Mapping[str, Any] | None = None,
        model: str = "authored",
        authored: bool = True,
        block: str | None = None,
        rendering: Mapping[str, Any] | None = None,
    ) -> Exchange:
        """Store the answer to one request, written by hand or by any model, and return the entry.

        The easy way to author a store without a key is to run the program once with
        `ReplayModel(FunctionModel(...), store, mode="record")`, which calls this for every request.

        Args:
            messages: The request history, as the agent passes it to a model.
            response: The answer to store.
            model_request_parameters: Tools, output tools and instructions of the request.
            model_settings: Settings of the request.
            model: Which model answered (`system:model_name`).
            authored: Whether a person or a scripted model wrote the answer.
            block: `module:line` of the asking Natural block, for readers.
            rendering: Context limits and renderer style of the step, compared on a later miss.
        """
        request, ids = canonical_with_ids(messages, model_settings, model_request_parameters, self.redaction)
        # Numbering continues from the request, so the ids match the next request's history exactly.
        (stored,) = clean(ModelMessagesTypeAdapter.dump_python([response], mode="json"), RESPONSE_DROPPED_KEYS, ids, self.redaction)
        exchange = Exchange(
            request=request,
            response=stored,
            model=model,
            authored=authored,
            created_with=library_versions(),
            block=block,
            round=round_of(messages),
            rendering=rendering,
        )
        self.add(exchange)
        return exchange

    def nearest(self, request: Mapping[str, Any], *, block: str | None = None, round_: int | None = None) -> Exchange | None:
        """The stored exchange whose request reads most like `request`, preferring the same block and round."""
        return nearest_exchange(self.exchanges, request, block=block, round_=round_)


@contextmanager
def _locked(path: Path, *, exclusive: bool) -> Iterator[BinaryIO | None]:
    """The open file at `path` under a shared (reading) or exclusive (writing, created if missing) lock.

    Yields `None` when reading a missing file. A compaction replaces the file by renaming it; a lock taken on
    the replaced file is dropped and taken again on the new one.
    """
    while True:
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT if exclusive else os.O_RDONLY
        try:
            fd = os.open(path, flags, 0o666)
        except FileNotFoundError:
            if exclusive:
                raise
            yield None
            return
        with os.fdopen(fd, "r+b" if exclusive else "rb", buffering=0) as handle:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                current: int | None = path.stat().st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                yield handle
                return
        # closing the handle released the lock on the replaced file; try again on the new one


def _fd_stamp(handle: BinaryIO) -> tuple[int, int, int]:
    stat = os.fstat(handle.fileno())
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)
