"""Record model exchanges once, replay them anywhere: a store file and a pydantic-ai model that reads it.

`ReplayModel` wraps any pydantic-ai model. In `record` mode it passes each request to the wrapped model and
stores the exchange; in `replay` mode it answers from the store and never builds, let alone calls, the
wrapped model; in `auto` mode it replays what the store has and records the rest. A request is found by the
sha256 of its canonical form: the messages, the instructions, the tool and output definitions and the model
settings, with what changes between two identical runs (timestamps, run ids, tool call ids, provider
response ids, usage) left out or renumbered. A changed prompt, changed data in scope or a changed tool
therefore changes the digest, and in `replay` mode the miss raises `ReplayMissError` with a diff against
the nearest stored request.

The digest covers the provider-neutral request, the history pydantic-ai hands to a model before an adapter
adds its own framing, so a store recorded against one provider replays with no provider at all.

The store (`ReplayStore`) is a YAML file, one entry per exchange. Recording appends to it under a file lock;
compacting sorts it by block and round, so recording the same run twice writes the same bytes. Loading
accepts plain data only and names any entry of the wrong shape. Every string passes through
`ContextRedaction.scrub_text`, and settings that carry headers or credential-like names are left out, so the
file holds no key or header.

The key holds only what the model sees. Prompts do not depend on the machine (token budgets are always
estimated, see `_tokens`), so a store recorded anywhere replays anywhere; the context limits, renderer
style and library versions an entry was recorded with are kept beside the key, and a miss names them when
they differ.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import hashlib
import heapq
import json
import os
import re
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TypeAlias

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: recorders there do not lock
    fcntl = None  # type: ignore[assignment]

import pydantic_core
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings, merge_model_settings

from ._secrets import current_scrubber
from .configuration import StepExecutorConfiguration
from .errors import NighthawkError, ReplayMissError
from .redaction import ContextRedaction

if TYPE_CHECKING:
    from .executor import AgentStepExecutor

__all__ = [
    "FORMAT_VERSION",
    "MODE_VARIABLE",
    "Exchange",
    "ReplayMissError",
    "ReplayMode",
    "ReplayModel",
    "ReplayStore",
    "canonical_request",
    "replay_executor",
    "replaying",
    "request_digest",
]

FORMAT_VERSION = 1
"""Version of the store file layout, written as `format:` at the top of every file."""

ReplayMode: TypeAlias = Literal["replay", "record", "auto"]
_MODES: tuple[ReplayMode, ...] = ("replay", "record", "auto")

MODE_VARIABLE = "NIGHTHAWK_REPLAY_MODE"
"""Environment variable giving the mode when none is passed (`replay` when it is unset), so one command can
re-record a whole test suite or notebook: `NIGHTHAWK_REPLAY_MODE=record pytest ...`."""

# Message fields that differ between two runs of the same program, or that never reach the model.
_VOLATILE_KEYS = frozenset(
    {
        "canonical_system",
        "conversation_id",
        "failed_attempts",
        "finish_reason",
        "history_digest",
        "id",
        "instructions",  # taken once from the request parameters instead of from every message
        "metadata",
        "model_id",
        "model_name",
        "provider_details",
        "provider_name",
        "provider_response_id",
        "provider_url",
        "run_id",
        "signature",
        "state",
        "timestamp",
        "usage",
        "workspace_ref",
    }
)
# A stored response keeps what a reader wants to know: which model answered, why it stopped, what it cost.
_RESPONSE_DROPPED_KEYS = _VOLATILE_KEYS - {"model_name", "provider_name", "finish_reason", "usage"}
# Values written by the model or a tool: stored exactly (only scrubbed), never pruned.
_OPAQUE_KEYS = frozenset({"args", "content"})
# What a model sees of a tool definition.
_TOOL_KEYS = ("name", "description", "parameters_json_schema", "strict")
# Request fields every round of a step repeats; the file keeps one copy in `shared` and refers to it.
_SHARED_FIELDS = ("instructions", "tools", "output")
_SHARED_PREFIX = "shared:"
_HEADER = (
    "# Nighthawk replay store: one entry per model exchange. Instructions and tool definitions are kept\n"
    "# once under `shared` (or, in an entry appended since the file was compacted, under the entry's own\n"
    "# `shared`). Requests are matched by content, so this file may be edited by hand. To re-record with a\n"
    "# real model, see docs/offline.md.\n"
)


# --- canonical requests ------------------------------------------------------------------------------


class _CallIds:
    """Renumbers tool call ids in order of first appearance: `call_1`, `call_2`, ..."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def __call__(self, original: str) -> str:
        if original not in self._ids:
            self._ids[original] = f"call_{len(self._ids) + 1}"
        return self._ids[original]


def _scrub(value: Any, redaction: ContextRedaction) -> Any:
    """`value` with every string scrubbed of the step's secret values and of credential-looking text."""
    if isinstance(value, str):
        return redaction.scrub_text(current_scrubber().scrub_values(value))
    if isinstance(value, dict):
        return {key: _scrub(item, redaction) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item, redaction) for item in value]
    return value


def _clean(value: Any, drop: frozenset[str], ids: _CallIds, redaction: ContextRedaction) -> Any:
    """A serialised message without `drop` keys, `None` fields and zero usage counts; call ids renumbered.

    Only what the model or a tool wrote (`_OPAQUE_KEYS`) is scrubbed: the structure (`kind`, `part_kind`,
    tool names) is the store's own and is kept as it is.
    """
    if isinstance(value, list):
        return [_clean(item, drop, ids, redaction) for item in value]
    if not isinstance(value, dict):
        return value
    cleaned: dict[str, Any] = {}
    for key in sorted(value):
        item = value[key]
        if key in drop or item is None:
            continue
        if key == "tool_call_id" and isinstance(item, str):
            cleaned[key] = ids(item)
        elif key == "args" and isinstance(item, str):
            try:  # providers send arguments as JSON text, test models as a dict: store the readable form
                cleaned[key] = _scrub(json.loads(item), redaction)
            except ValueError:
                cleaned[key] = _scrub(item, redaction)
        elif key in _OPAQUE_KEYS:
            cleaned[key] = _scrub(item, redaction)
        elif key == "usage" and isinstance(item, dict):
            cleaned[key] = {name: count for name, count in sorted(item.items()) if count not in (0, None, {})}
        else:
            cleaned[key] = _clean(item, drop, ids, redaction)
    return cleaned


def _jsonable(value: Any) -> Any:
    return pydantic_core.to_jsonable_python(value, fallback=repr)


def _tool(definition: Any) -> dict[str, Any]:
    data = _jsonable(definition)
    return {key: data[key] for key in _TOOL_KEYS if data.get(key) is not None}


def _instructions(messages: Sequence[ModelMessage], parameters: ModelRequestParameters) -> str | None:
    if parameters.instruction_parts is not None:
        return "\n\n".join(part.content for part in parameters.instruction_parts) or None
    for message in reversed(messages):
        if message.kind == "request" and message.instructions is not None:
            return message.instructions
    return None


# How a request travels, not what it asks: a changed timeout or retry count must not make a store miss.
_TRANSPORT_SETTINGS = frozenset({"timeout", "request_timeout", "max_retries"})


def _settings(settings: Mapping[str, Any] | None, redaction: ContextRedaction) -> dict[str, Any]:
    # Headers and credential-like settings never reach the file; the model does not see them anyway.
    return {
        name: _jsonable(value)
        for name, value in sorted((settings or {}).items())
        if name not in _TRANSPORT_SETTINGS
        and "header" not in name.lower()
        and not ContextRedaction().is_sensitive_name(name)
        and not redaction.is_sensitive_name(name)
    }


def _canonical(
    messages: Sequence[ModelMessage],
    settings: Mapping[str, Any] | None,
    parameters: ModelRequestParameters,
    redaction: ContextRedaction,
) -> tuple[dict[str, Any], _CallIds]:
    ids = _CallIds()
    output = {
        "mode": parameters.output_mode,
        "tools": [_tool(definition) for definition in parameters.output_tools],
        "object": _jsonable(parameters.output_object),
        "template": parameters.prompted_output_template,
        "allow_text": parameters.allow_text_output,
    }
    request = {
        "instructions": _instructions(messages, parameters),
        "tools": [_tool(definition) for definition in parameters.function_tools],
        "native_tools": [_jsonable(tool) for tool in parameters.native_tools],
        "output": {key: value for key, value in output.items() if value is not None},
        "settings": _settings(settings, redaction),
        "messages": _clean(ModelMessagesTypeAdapter.dump_python(list(messages), mode="json"), _VOLATILE_KEYS, ids, redaction),
    }
    # Instructions and tool definitions are the protocol: stored as sent. The messages were scrubbed above.
    return {key: value for key, value in request.items() if value not in (None, [], {})}, ids


def canonical_request(
    messages: Sequence[ModelMessage],
    model_settings: Mapping[str, Any] | None,
    model_request_parameters: ModelRequestParameters,
    *,
    redaction: ContextRedaction | None = None,
) -> dict[str, Any]:
    """The part of a model request that decides the answer, as JSON data without volatile fields.

    Args:
        messages: The history pydantic-ai hands to the model.
        model_settings: Settings of the request; headers and credential-like names are left out.
        model_request_parameters: Tool definitions, output tools and instructions of the request.
        redaction: Scrubs credential-looking text; defaults to `ContextRedaction()`.
    """
    return _canonical(messages, model_settings, model_request_parameters, redaction or ContextRedaction())[0]


def _digest(request: Mapping[str, Any]) -> str:
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def request_digest(
    messages: Sequence[ModelMessage],
    model_settings: Mapping[str, Any] | None,
    model_request_parameters: ModelRequestParameters,
) -> str:
    """The sha256 (hex) of the canonical request: equal for two requests a model cannot tell apart."""
    return _digest(canonical_request(messages, model_settings, model_request_parameters))


def _round(messages: Sequence[ModelMessage]) -> int:
    return 1 + sum(1 for message in messages if message.kind == "response")


# --- the store ---------------------------------------------------------------------------------------


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
        object.__setattr__(self, "digest", _digest(self.request))

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
        return _outline(self.request)


def _outline(request: Mapping[str, Any]) -> tuple[frozenset[str], int]:
    """Digests of a request's top-level fields and the size of its messages, to rank near misses cheaply."""
    fields_ = frozenset(f"{key}:{_digest({key: value})}" for key, value in request.items() if key != "messages")
    return fields_, len(json.dumps(request.get("messages"), ensure_ascii=False, default=str))


def _rendering_settings(limits: Any, style: str) -> dict[str, Any]:
    """What besides the program and the data shapes a rendered prompt: the context limits and the style."""
    return {"context_limits": dataclasses.asdict(limits), "json_renderer_style": style}


@functools.cache
def _versions() -> str:
    from importlib import metadata

    try:
        nighthawk_version = metadata.version("nighthawk-jupyter")
    except metadata.PackageNotFoundError:
        nighthawk_version = "source"
    return f"nighthawk {nighthawk_version}, pydantic-ai {metadata.version('pydantic-ai-slim')}"


@functools.cache
def _yaml_dumper() -> type:
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        pass

    def text(dumper: Any, value: str) -> Any:
        # Multi-line prompts as literal blocks: one line of the file per prompt line, so diffs read well.
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    return Dumper


def _yaml(data: Any) -> str:
    import yaml

    # No line folding: a very long line stays one line, and the file loads back to the same strings.
    return yaml.dump(data, Dumper=_yaml_dumper(), sort_keys=False, allow_unicode=True, width=1_000_000)


def _yaml_part(data: Any) -> str:
    """`_yaml(data)` as a piece of a larger document: without the `...` end marker PyYAML writes after a
    final block scalar that keeps its trailing newlines (`|+`), which would end the document early."""
    text = _yaml(data)
    return text[: -len("...\n")] if text.endswith("\n...\n") else text


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
        data = _load_document(text, self._fail)
        entries: list[Any] = []
        shared: dict[str, Any] = {}
        if data is not None:
            _check_document(data, self._fail)
            entries = data.get("exchanges") or []
            shared.update(data.get("shared") or {})
            for entry in entries:  # an appended entry carries the shared parts that were new when it was written
                if isinstance(entry, dict) and isinstance(entry.get("shared"), dict):
                    shared.update(entry["shared"])
        exchanges: dict[str, Exchange] = {}
        positions: dict[str, int] = {}
        for position, entry in enumerate(entries, start=1):
            exchange = _entry_exchange(entry, shared, position, self._fail)
            exchanges[exchange.digest] = exchange  # a later entry for the same request wins
            positions[exchange.digest] = position
        self._exchanges, self._positions, self._shared, self._seen = exchanges, positions, set(shared), stamp
        self._entries = len(entries)
        self._appendable = _appendable(text)

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
        entry["request"] = _share(entry["request"], shared)
        new_shared = {key: value for key, value in sorted(shared.items()) if key not in self._shared}
        if new_shared:
            entry["shared"] = new_shared
        text = _yaml_part([entry])
        if skeleton:
            text = f"{_HEADER}format: {FORMAT_VERSION}\nexchanges:\n{text}"
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
            entry["request"] = _share(entry["request"], shared)
            entries.append(entry)
        head = _yaml_part({"format": FORMAT_VERSION, "shared": dict(sorted(shared.items()))})
        # `exchanges` comes last, as a block list, so later entries can be appended to the file as text.
        text = _HEADER + head + ("exchanges:\n" + _yaml_part(entries) if entries else "exchanges: []\n")
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
        request, ids = _canonical(messages, model_settings, model_request_parameters, self.redaction)
        # Numbering continues from the request, so the ids match the next request's history exactly.
        (stored,) = _clean(ModelMessagesTypeAdapter.dump_python([response], mode="json"), _RESPONSE_DROPPED_KEYS, ids, self.redaction)
        exchange = Exchange(
            request=request,
            response=stored,
            model=model,
            authored=authored,
            created_with=_versions(),
            block=block,
            round=_round(messages),
            rendering=rendering,
        )
        self.add(exchange)
        return exchange

    def nearest(self, request: Mapping[str, Any], *, block: str | None = None, round_: int | None = None) -> Exchange | None:
        """The stored exchange whose request reads most like `request`, preferring the same block and round.

        Only a few candidates, ranked first by which top-level fields are equal and how close the size of the
        messages is, are compared line by line, so a miss stays quick in a store of thousands of entries.
        """
        exchanges = list(self.exchanges)
        pool = [exchange for exchange in exchanges if block is not None and exchange.block == block] or exchanges
        pool = [exchange for exchange in pool if exchange.round == round_] or pool
        if not pool:
            return None
        wanted_fields, wanted_size = _outline(request)

        def outline_rank(exchange: Exchange) -> tuple[int, int]:
            fields_, size = exchange._outline
            return (-len(fields_ & wanted_fields), abs(size - wanted_size))

        finalists = heapq.nsmallest(_NEAREST_FINALISTS, pool, key=outline_rank)
        wanted = _yaml(dict(request)).splitlines()

        def similarity(exchange: Exchange) -> float:
            stored = _yaml(dict(exchange.request)).splitlines()
            return difflib.SequenceMatcher(None, wanted, stored, autojunk=False).ratio()

        return max(finalists, key=similarity)

def _share(request: dict[str, Any], shared: dict[str, Any]) -> dict[str, Any]:
    """Move the parts every round repeats (instructions, tools, output) to `shared`, leaving a reference."""
    compact = dict(request)
    for key in _SHARED_FIELDS:
        if key in compact:
            reference = f"{_SHARED_PREFIX}{key}-{_digest({key: compact[key]})[:12]}"
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


_COMPACT_SLACK = 16
"""Superseded entries allowed beyond the live ones before recording compacts the file."""
_NEAREST_FINALISTS = 12
"""How many candidates a miss compares line by line."""
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
# Tags a store may spell out; anything else (Python objects, sets, timestamps, custom tags) is refused.
_PLAIN_TAGS = frozenset(
    {None, "!"} | {f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map")}
)


def _appendable(text: str) -> bool:
    """Whether `text` ends with its top-level `exchanges:` block list, so an entry can be appended as text."""
    end = max((match.end() for match in _APPENDABLE.finditer(text)), default=None)
    return end is not None and _NOT_APPENDABLE.search(text, end) is None


@functools.cache
def _plain_scalars() -> tuple[dict[str, list[tuple[str, Any]]], dict[str, Callable[[Any], Any]]]:
    """PyYAML's rules for untagged plain scalars (null, bool, int, float), without timestamps and merges."""
    import yaml

    wanted = {"null", "bool", "int", "float"}
    resolvers = {
        first: [(tag, regexp) for tag, regexp in rules if tag.rsplit(":", 1)[-1] in wanted]
        for first, rules in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
    }
    constructor = yaml.constructor.SafeConstructor()
    construct = {f"tag:yaml.org,2002:{name}": getattr(constructor, f"construct_yaml_{name}") for name in wanted}
    return resolvers, construct


def _load_document(text: str, fail: Callable[..., NighthawkError]) -> Any:
    """The single YAML document of `text` as plain data, built from libyaml's event stream.

    Anchors, aliases and tags beyond plain data are refused as they are met, so an alias bomb (a few KB that
    expand to gigabytes) fails at once instead of being expanded, and nothing but dicts, lists, strings,
    numbers, booleans and `None` is ever built. Dates stay strings: a date in a prompt is text. Building the
    data directly from the events also skips PyYAML's node and constructor layers, which dominate its cost.
    """
    import yaml

    resolvers, construct = _plain_scalars()
    parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # only its libyaml parser is used
    root: Any = None
    stack: list[Any] = []  # open lists and mappings, innermost last
    documents = 0
    events: Iterator[Any] = yaml.parse(text, Loader=parser)  # typed loosely: each kind has its own fields
    try:
        for event in events:
            kind = type(event)
            line = event.start_mark.line + 1 if event.start_mark is not None else 0
            if kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise fail(f"line {line} starts a second YAML document; a store is one document")
                continue
            if kind not in (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent):
                if kind in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
                    stack.pop()
                elif kind is yaml.AliasEvent:
                    raise fail(f"line {line} uses a YAML anchor or alias; a replay store holds plain data only")
                continue
            if event.anchor is not None:
                raise fail(f"line {line} uses a YAML anchor or alias; a replay store holds plain data only")
            if event.tag is not None and event.tag not in _PLAIN_TAGS:
                raise fail(f"line {line} has the YAML tag {event.tag!r}; a replay store holds plain data only")
            value: Any
            if kind is yaml.ScalarEvent:
                value = event.value
                tag = event.tag
                if tag is None and event.implicit[0]:  # plain and untagged: maybe null, bool or a number
                    rules = resolvers.get(value[:1], ())
                    tag = next((rule for rule, regexp in rules if regexp.match(value)), None)
                if tag in construct:
                    try:
                        value = construct[tag](yaml.ScalarNode(tag, value))
                    except ValueError as exc:
                        raise fail(f"line {line}: {value!r} is not a valid {tag.rsplit(':', 1)[-1]}", exc) from exc
            else:
                value = {} if kind is yaml.MappingStartEvent else []
            if not stack:
                root = value
            else:
                frame = stack[-1]
                if isinstance(frame, list):
                    frame.append(value)
                elif frame.key is _NO_KEY:
                    if isinstance(value, (dict, list)):
                        raise fail(f"line {line} uses a mapping or list as a key; keys must be plain values")
                    frame.key = value
                else:
                    frame.data[frame.key] = value
                    frame.key = _NO_KEY
            if kind is yaml.MappingStartEvent:
                stack.append(_MappingFrame(value))
            elif kind is yaml.SequenceStartEvent:
                stack.append(value)
    except yaml.YAMLError as exc:
        raise fail(" ".join(str(exc).split()), exc) from exc
    return root


_NO_KEY = object()
"""Marks a mapping whose next scalar is a key."""


class _MappingFrame:
    """A mapping being built from events, with the key waiting for its value."""

    __slots__ = ("data", "key")

    def __init__(self, data: dict[Any, Any]) -> None:
        self.data = data
        self.key: Any = _NO_KEY


def _check_document(document: Any, fail: Callable[..., NighthawkError]) -> None:
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


def _entry_exchange(entry: Any, shared: Mapping[str, Any], position: int, fail: Callable[..., NighthawkError]) -> Exchange:
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


def _miss_message(
    store: ReplayStore,
    request: Mapping[str, Any],
    block: str | None,
    round_: int,
    rendering: Mapping[str, Any] | None,
) -> str:
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
            _yaml(dict(nearest.request)).splitlines(),
            _yaml(dict(request)).splitlines(),
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
    if nearest.created_with != _versions():
        causes.append(f"library versions: recorded with {nearest.created_with}, now {_versions()}")
    return causes


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _refuse_masked_answer(hit: Exchange, store: ReplayStore) -> None:
    """Fail rather than replay a tool call whose recorded arguments lost a secret value to the mask."""
    placeholders = {store.redaction.placeholder, current_scrubber().redaction.placeholder}
    for part in hit.response.get("parts") or ():
        if isinstance(part, dict) and part.get("part_kind") == "tool-call":
            arguments = json.dumps(part.get("args"), ensure_ascii=False)
            placeholder = next((text for text in placeholders if text in arguments), None)
            if placeholder is not None:
                raise ReplayMissError(
                    f"the recorded answer for block {hit.block!r}, round {hit.round} calls `{part.get('tool_name')}` "
                    f"with {placeholder!r} in its arguments: when it was recorded, the model wrote a secret value "
                    "there, and a replay store never keeps one, so replaying it would run the placeholder instead "
                    "of the value and give a different result than the recorded run. Re-record it so the model "
                    "refers to the secret by its variable name, or remove the secret from the block's scope."
                )


def _resolve_mode(mode: str | None) -> ReplayMode:
    if mode is None:
        mode = os.environ.get(MODE_VARIABLE) or "replay"
        if mode not in _MODES:
            raise NighthawkError(f"unknown replay mode {mode!r} in `{MODE_VARIABLE}`; use one of {', '.join(_MODES)}")
    if mode not in _MODES:
        raise NighthawkError(f"unknown replay `mode` {mode!r}; use one of {', '.join(_MODES)}")
    return mode  # type: ignore[return-value]


# --- the model ---------------------------------------------------------------------------------------


class ReplayModel(Model):
    """A pydantic-ai model that answers from a `ReplayStore`, recording through a wrapped model when allowed.

    The wrapped model receives each request exactly as it would unwrapped (it prepares the history for its own
    wire). It is built only when a request has to reach it, so replaying needs no provider package, key or
    network.
    """

    def __init__(
        self,
        wrapped: Model | str | None,
        store: ReplayStore | str | os.PathLike[str],
        mode: ReplayMode | None = None,
        *,
        authored: bool | None = None,
    ) -> None:
        """Wrap `wrapped` with the store at `store`.

        Args:
            wrapped: The model to record from: a pydantic-ai `Model`, a `provider:model` string (built on the
                first request that reaches it), or `None` to replay only.
            store: A `ReplayStore` or the path of its file.
            mode: `replay` answers only from the store; `record` asks the wrapped model every time and stores
                the answer; `auto` replays hits and records misses. `None` reads `NIGHTHAWK_REPLAY_MODE`,
                defaulting to `replay`.
            authored: Mark recorded entries as authored; by default true for pydantic-ai's `FunctionModel`
                and `TestModel`, false for any other model.

        Raises:
            NighthawkError: Unknown `mode`, `record`/`auto` without a model to record from, a store that
                `record`/`auto` could not write, or an existing file that is not a valid store (both checked
                here, before any request is paid for).
        """
        super().__init__()
        mode = _resolve_mode(mode)
        if mode != "replay" and wrapped is None:
            raise NighthawkError(
                f"replay `mode` {mode!r} records, so it needs a model to record from: pass `wrapped=` (a "
                "pydantic-ai model or a 'provider:model' string), or use mode='replay'"
            )
        self.store = store if isinstance(store, ReplayStore) else ReplayStore(store)
        if mode != "replay":
            self.store.check_writable()
        self.store.check_readable()  # a broken file fails here, not after a recorded request was paid for
        self.mode: ReplayMode = mode
        self._spec = wrapped
        self._wrapped: Model | None = wrapped if isinstance(wrapped, Model) else None
        self._authored = authored

    @property
    def model_name(self) -> str:
        # The wrapped model's name, so displays and events read the same whether a block is replayed or
        # recorded.
        if self._spec is None:
            return "replay"
        return self._spec.split(":", 1)[-1] if isinstance(self._spec, str) else self._spec.model_name

    @property
    def system(self) -> str:
        return "replay"

    def __repr__(self) -> str:
        return f"ReplayModel({self._label()!r}, {self.store!r}, mode={self.mode!r})"

    def _label(self) -> str:
        if self._spec is None or isinstance(self._spec, str):
            return self._spec or "none"
        return f"{self._spec.system}:{self._spec.model_name}"

    def _resolve(self) -> Model:
        if self._wrapped is None:
            from pydantic_ai.exceptions import UserError
            from pydantic_ai.models import infer_model

            from .executor import check_credentials

            assert isinstance(self._spec, str)
            check_credentials(self._spec)
            try:
                self._wrapped = infer_model(self._spec)
            except (UserError, ImportError, ValueError) as exc:
                raise NighthawkError(f"cannot record with `model` {self._spec!r}: {exc}") from exc
        return self._wrapped

    def _is_authored(self, model: Model) -> bool:
        if self._authored is not None:
            return self._authored
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.models.test import TestModel

        return isinstance(model, (FunctionModel, TestModel))

    def prepare_messages(
        self, messages: list[ModelMessage], model_request_parameters: ModelRequestParameters | None = None
    ) -> list[ModelMessage]:
        # Keep the history provider-neutral: the digest is taken on it, and the wrapped model prepares it
        # for its own wire in `_record`.
        return messages

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        from .step import current_step

        request, _ = _canonical(messages, model_settings, model_request_parameters, self.store.redaction)
        if self.mode != "record":
            hit = self.store.find(_digest(request))
            if hit is not None:
                _refuse_masked_answer(hit, self.store)
                return self.store.response_for(hit)
        step = current_step()
        block = step.step_id if step is not None else None
        rendering = _rendering_settings(step.rendering.limits, step.rendering.style) if step is not None else None
        if self.mode == "replay":
            raise ReplayMissError(_miss_message(self.store, request, block, _round(messages), rendering))
        model = self._resolve()
        prepared = model.prepare_messages(list(messages), model_request_parameters)
        # The wrapped model's own default settings apply when it answers; they are not part of the key.
        settings = merge_model_settings(model.settings, model_settings)
        response = await model.request(prepared, settings, model_request_parameters)
        self.store.record_exchange(
            messages,
            response,
            model_request_parameters=model_request_parameters,
            model_settings=model_settings,
            model=f"{model.system}:{model.model_name}",
            authored=self._is_authored(model),
            block=block,
            rendering=rendering,
        )
        return response

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NighthawkError("a replay store answers whole requests only; streamed requests are not supported")
        yield  # pragma: no cover - makes this an async generator

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        if self._wrapped is not None:
            return await self._wrapped.__aexit__(*exc_info)
        return None


# --- executors and scopes ----------------------------------------------------------------------------


def replay_executor(
    store: ReplayStore | str | os.PathLike[str],
    mode: ReplayMode | None = None,
    *,
    model: Model | str | None = None,
    configuration: StepExecutorConfiguration | None = None,
) -> AgentStepExecutor:
    """An agent executor whose model is a `ReplayModel` over `store`.

    In a notebook, pass it to `nighthawk.set_default_step_executor`; around a block of code, use
    `replaying(...)` instead.

    Args:
        store: A `ReplayStore` or the path of its file.
        mode: `replay`, `record` or `auto` (see `ReplayModel`); `None` reads `NIGHTHAWK_REPLAY_MODE`.
        model: The model to record from; defaults to `configuration.model` (never built in `replay` mode).
        configuration: Everything else about the executor; defaults to `StepExecutorConfiguration()`.
    """
    from .executor import AgentStepExecutor

    configuration = configuration or StepExecutorConfiguration()
    wrapped = model if model is not None else configuration.model
    if isinstance(wrapped, ReplayModel):  # replaying inside a replaying scope: wrap what it wraps
        wrapped = wrapped._spec
    replay_model = ReplayModel(wrapped, store, mode)
    return AgentStepExecutor.from_configuration(configuration=replace(configuration, model=replay_model))


@contextmanager
def replaying(
    store: ReplayStore | str | os.PathLike[str], mode: ReplayMode | None = None, *, model: Model | str | None = None
) -> Iterator[AgentStepExecutor]:
    """Run the blocks inside the `with` statement against `store`, in a nested scope.

    The executor in force keeps its configuration and only its model is wrapped; with no executor in force, a
    default `AgentStepExecutor` configuration is used.

    Args:
        store: A `ReplayStore` or the path of its file.
        mode: `replay`, `record` or `auto` (see `ReplayModel`); `None` reads `NIGHTHAWK_REPLAY_MODE`.
        model: The model to record from; defaults to the model of the executor in force.

    Yields:
        The executor used inside the scope.

    Raises:
        NighthawkError: The executor in force has no configuration to take a model from (a scripted one).
    """
    from .runtime import get_step_executor, scope

    try:
        current: object = get_step_executor()
    except NighthawkError:
        current = None
    configuration = getattr(current, "configuration", None) if current is not None else StepExecutorConfiguration()
    if not isinstance(configuration, StepExecutorConfiguration):
        raise NighthawkError(
            f"cannot replay with the executor in force, {current!r}, which has no model to wrap; use "
            "`nighthawk.run(nighthawk.replay.replay_executor(path))` instead"
        )
    executor = replay_executor(store, mode, model=model, configuration=configuration)
    with scope(step_executor=executor):
        yield executor
