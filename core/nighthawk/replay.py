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

The store (`ReplayStore`) is a YAML file, one entry per exchange, sorted by block and round, so recording
the same run twice writes the same bytes. Every string passes through `ContextRedaction.scrub_text`, and
settings that carry headers or credential-like names are left out, so the file holds no key or header.
"""

from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import pydantic_core
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings, merge_model_settings

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
    "# Nighthawk replay store: one entry per model exchange, sorted by block and round. Instructions and\n"
    "# tool definitions are kept once under `shared`. Requests are matched by content, so this file may be\n"
    "# edited by hand. To re-record with a real model, see docs/offline.md.\n"
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
    """`value` with every string scrubbed of credential-looking text, otherwise unchanged."""
    if isinstance(value, str):
        return redaction.scrub_text(value)
    if isinstance(value, dict):
        return {key: _scrub(item, redaction) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item, redaction) for item in value]
    return value


def _clean(value: Any, drop: frozenset[str], ids: _CallIds, redaction: ContextRedaction) -> Any:
    """A serialised message without `drop` keys, `None` fields and zero usage counts; call ids renumbered."""
    if isinstance(value, list):
        return [_clean(item, drop, ids, redaction) for item in value]
    if not isinstance(value, dict):
        return _scrub(value, redaction)
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
                cleaned[key] = redaction.scrub_text(item)
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


def _settings(settings: Mapping[str, Any] | None, redaction: ContextRedaction) -> dict[str, Any]:
    # Headers and credential-like settings never reach the file; the model does not see them anyway.
    return {
        name: _jsonable(value)
        for name, value in sorted((settings or {}).items())
        if "header" not in name.lower() and not ContextRedaction().is_sensitive_name(name) and not redaction.is_sensitive_name(name)
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
    return _scrub({key: value for key, value in request.items() if value not in (None, [], {})}, redaction), ids


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
        return {
            "block": self.block,
            "round": self.round,
            "model": self.model,
            "authored": self.authored,
            "created_with": self.created_with,
            "request": dict(self.request),
            "response": dict(self.response),
        }


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


class ReplayStore:
    """A YAML file of model exchanges, read on first use and rewritten after each recorded exchange.

    One store per notebook or test module is the intended granularity. Entries are sorted by block, round and
    request digest, so recording the same run twice writes the same bytes.
    """

    def __init__(self, path: str | os.PathLike[str], *, redaction: ContextRedaction | None = None) -> None:
        """Open the store at `path` (read on first use); a missing file is an empty store.

        Args:
            path: The store file, conventionally `<notebook or module>.replay.yaml`.
            redaction: Masking applied to everything stored; defaults to `ContextRedaction()`.
        """
        self.path = Path(path)
        self.redaction = redaction or ContextRedaction()
        self._lock = threading.Lock()
        self._exchanges: dict[str, Exchange] | None = None
        self._seen: tuple[int, int] | None = None
        """Modification time and size of the file when this object last read or wrote it."""

    def __repr__(self) -> str:
        return f"ReplayStore({str(self.path)!r})"

    def _load(self) -> dict[str, Exchange]:
        if self._exchanges is None:
            self._exchanges = self._read()
        return self._exchanges

    def _stamp(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def _read(self) -> dict[str, Exchange]:
        import yaml

        self._seen = self._stamp()
        if self._seen is None:
            return {}
        exchanges: dict[str, Exchange] = {}
        try:
            data = yaml.load(self.path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION:
                found = data.get("format") if isinstance(data, dict) else type(data).__name__
                raise ValueError(f"`format` is {found!r}, expected {FORMAT_VERSION}")
            shared = data.get("shared") or {}
            for entry in data.get("exchanges") or []:
                exchange = Exchange(**{**entry, "request": _expand(entry.get("request"), shared)})
                exchanges[exchange.digest] = exchange
        except (yaml.YAMLError, ValueError, TypeError) as exc:
            raise NighthawkError(
                f"cannot read the replay store {str(self.path)!r}: {exc}. Fix the file, or delete it and record again"
            ) from exc
        return exchanges

    @property
    def exchanges(self) -> tuple[Exchange, ...]:
        """Every stored exchange, in file order."""
        with self._lock:
            return tuple(sorted(self._load().values(), key=Exchange._sort_key))

    def __len__(self) -> int:
        with self._lock:
            return len(self._load())

    def find(self, digest: str) -> Exchange | None:
        """The exchange whose request has `digest`, if any."""
        with self._lock:
            return self._load().get(digest)

    def add(self, exchange: Exchange) -> None:
        """Store `exchange`, replacing an entry with the same request, and rewrite the file."""
        with self._lock:
            self._load()[exchange.digest] = exchange
            self._write()

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
        )
        self.add(exchange)
        return exchange

    def nearest(self, request: Mapping[str, Any], *, block: str | None = None) -> Exchange | None:
        """The stored exchange whose request reads most like `request`, preferring the same block."""
        exchanges = self.exchanges
        candidates = [exchange for exchange in exchanges if block is not None and exchange.block == block] or list(exchanges)
        if not candidates:
            return None
        wanted = _yaml(dict(request)).splitlines()

        def similarity(exchange: Exchange) -> float:
            stored = _yaml(dict(exchange.request)).splitlines()
            return difflib.SequenceMatcher(None, wanted, stored, autojunk=False).ratio()

        return max(candidates, key=similarity)

    def _write(self) -> None:
        exchanges = self._load()
        if self._stamp() != self._seen:
            # Someone else (another store object on this file) wrote since we read: keep their entries too.
            for digest, exchange in self._read().items():
                exchanges.setdefault(digest, exchange)
        shared: dict[str, Any] = {}
        entries = []
        for exchange in sorted(exchanges.values(), key=Exchange._sort_key):
            entry = exchange._as_yaml()
            entry["request"] = _share(entry["request"], shared)
            entries.append(entry)
        document = {"format": FORMAT_VERSION, "shared": dict(sorted(shared.items())), "exchanges": entries}
        text = _HEADER + _yaml(document)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Write beside the file and rename, so a reader never sees half a store.
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
                file.write(text)
            os.replace(temporary, self.path)
            self._seen = self._stamp()
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


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


def _miss_message(store: ReplayStore, request: Mapping[str, Any], block: str | None, round_: int) -> str:
    where = f"block {block!r}, round {round_}" if block else f"round {round_} of a request made outside a Natural block"
    fix = (
        f'Re-record with mode="record" (or {MODE_VARIABLE}=record), or "auto" to record only what is missing; '
        "see docs/offline.md."
    )
    nearest = store.nearest(request, block=block)
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
    return (
        f"the replay store {str(store.path)!r} has no answer for {where}: the prompt, the data in scope, the "
        "tools or the settings differ from every recorded request. Against the nearest one:\n"
        + "\n".join(diff)
        + f"\n{fix}"
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
            NighthawkError: Unknown `mode`, or `record`/`auto` without a model to record from.
        """
        super().__init__()
        mode = _resolve_mode(mode)
        if mode != "replay" and wrapped is None:
            raise NighthawkError(
                f"replay `mode` {mode!r} records, so it needs a model to record from: pass `wrapped=` (a "
                "pydantic-ai model or a 'provider:model' string), or use mode='replay'"
            )
        self.store = store if isinstance(store, ReplayStore) else ReplayStore(store)
        self.mode: ReplayMode = mode
        self._spec = wrapped
        self._wrapped: Model | None = wrapped if isinstance(wrapped, Model) else None
        self._authored = authored

    @property
    def model_name(self) -> str:
        # The wrapped model's name, so the tokenizer (and with it every prompt) is the same whether a block
        # is replayed or recorded.
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
                return hit.model_response()
        step = current_step()
        block = step.step_id if step is not None else None
        if self.mode == "replay":
            raise ReplayMissError(_miss_message(self.store, request, block, _round(messages)))
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
