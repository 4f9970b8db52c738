"""The secret values of a step, and the one scrubber every outgoing text passes through.

`ContextRedaction` decides by *name* and by *shape* while a value is being rendered. That is not enough once
text leaves by another road: `nh_eval("db_password")` renders a bare string with no name attached, `str(conn)`
prints a password inside ordinary text, an exception message quotes it. So each step keeps a
`SecretScrubber` of the secret *values* it has met, and every way out calls `current_scrubber()`:

* the model: `SecretScrubbingModel` (in `_model.py`) scrubs the user data of every request (prompt,
  tool results and arguments, retries) before the real model, or a replay store, sees it;
* events: `events.emit` scrubs each event once, so displays, OpenTelemetry spans and any other listener only
  ever receive scrubbed text;
* exceptions: the runner scrubs the messages of an exception (and its cause chain) before it reaches the
  caller, and of the exception a `raise` outcome asks for;
* logs: `LogScrubber` is a filter on the `nighthawk` logger.

The values are found where the step looks, never by walking its scope (a module, the IPython shell, a big
table the block never reads): when it starts, the step's credential-named variables and globals (only the
names of the others are read), the credential-named environment variables, what its read bindings hold
under credential names, and what the fields of an f-string block lead to; for every expression it runs,
the values its names lead to and the value it returns. Inside those, only dicts, sequences, dataclasses,
pydantic models and the credential-named columns of tables are followed (`_values`). A value is
kept when it sits under a credential name and is not ordinary text (`looks_ordinary`), or has a
credential shape.

Besides the exact value, a few forms derived from it are masked: its JSON and `repr` escapes, upper and
lower case, reversed, base64, and any piece of it at least half its length (a secret split in two).
"""

from __future__ import annotations

import ast
import base64
import copy
import dataclasses
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, KeysView, Mapping
from contextvars import ContextVar
from contextlib import contextmanager
from functools import lru_cache
from itertools import islice
from types import ModuleType
from typing import Any, TypeVar

from ._values import collect_into, collect_secret_values, credential_columns, field_names, is_table
from . import SHORTEST_CREDENTIAL_CHARS, SHORTEST_SECRET_CHARS, ContextRedaction, looks_ordinary

__all__ = [
    "MIN_SECRET_VALUE_CHARS",
    "LogScrubber",
    "SecretScrubber",
    "collect_secret_values",
    "current_scrubber",
    "note_expression",
    "note_value",
    "scrub_exception",
    "scrubbing_step",
]

T = TypeVar("T")

MIN_SECRET_VALUE_CHARS = SHORTEST_SECRET_CHARS
"""Shorter values are not masked in all outgoing text (see `looks_ordinary`); they are still masked where
they are shown under their name."""

# Each secret value adds a few substring tests to every text sent: a table of passwords under one name
# (`passwords = [...]`) contributes its first values only. The rest stay masked where shown under the name.
_MAX_VALUES = 256
# Derived pieces (prefixes, suffixes) are masked for secrets up to this size; a PEM key is matched by shape.
_MAX_SPLIT_CHARS = 64
# Texts a scrubber remembers as clean (a step's prompt, its tool results) before it forgets them all.
_MAX_CLEAN_TEXTS = 16
# Longer texts are not remembered: the scrubber outside steps lives as long as the process.
_MAX_CLEAN_CHARS = 200_000
# Environment variables the `pwd` name pattern matches by accident: they hold directories, not passwords.
_NOT_SECRET_ENVIRONMENT = frozenset({"PWD", "OLDPWD"})


def _escapes(value: str) -> Iterator[str]:
    """`value` and the escaped forms JSON and `repr` give it, each of which would disclose it."""
    yield value
    yield json.dumps(value)[1:-1]
    yield json.dumps(value, ensure_ascii=False)[1:-1]
    yield repr(value)[1:-1]


def _derived(value: str) -> Iterator[tuple[str, bool]]:
    """The forms of `value` a program produces in one call (case changes, reversal, encodings, split
    pieces), each with whether it ends like `value` rather than starting like it (a trailing piece)."""
    for form in (value, value.upper(), value.lower(), value[::-1]):
        yield form, False
    raw = value.encode("utf-8", "replace")
    for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        yield encoded, False
        yield encoded.rstrip("="), False
    if len(value) <= _MAX_SPLIT_CHARS:
        # A split anywhere leaves a piece of at least half the secret at one end: mask every such piece
        # that is not ordinary text on its own.
        shortest = max(SHORTEST_SECRET_CHARS, len(value) // 2)
        for size in range(shortest, len(value)):
            if not looks_ordinary(head := value[:size]):
                yield head, False
            if not looks_ordinary(tail := value[-size:]):
                yield tail, True


def _masked_texts(value: str) -> Iterator[tuple[str, str]]:
    """(text, gate) pairs: each text to mask, and a short lower-case piece every occurrence of it holds.

    All the forms of a secret that start alike (the value in any case, its leading pieces) share one gate,
    so scrubbing tests a few gates per secret, not every form. A gate is as long as the shortest piece:
    a long needle is found (or ruled out) faster.
    """
    size = max(SHORTEST_SECRET_CHARS, len(value) // 2)
    for form, trailing in dict.fromkeys(_derived(value)):
        for text in dict.fromkeys(_escapes(form)):
            lowered = text.lower()
            yield text, lowered[-size:] if trailing else lowered[:size]


class SecretScrubber:
    """Masks the secret values met so far, their derived forms, then credential-shaped text."""

    def __init__(self, *, redaction: ContextRedaction | None = None, values: Iterable[str] = ()) -> None:
        self.redaction = redaction or ContextRedaction()
        self._values: frozenset[str] = frozenset()
        self._gates: dict[str, tuple[str, ...]] = {}
        """Gate -> the texts to mask that hold it (see `_masked_texts`)."""
        self._shortest = SHORTEST_CREDENTIAL_CHARS
        """Text shorter than this can hold neither a secret value nor a credential shape."""
        self._looked_at: set[int] = set()
        """Ids of values already searched in this step (each is searched once)."""
        self._clean: tuple[frozenset[str], dict[str, None]] = (self._values, {})
        """Texts `scrub` left as they were while `values` was the first item (see `scrub`)."""
        self.add(values)

    def __repr__(self) -> str:
        return f"SecretScrubber({len(self._values)} values)"

    @property
    def values(self) -> frozenset[str]:
        """The secret values masked, with their derived forms, wherever they occur."""
        return self._values

    def _start_from(self, base: SecretScrubber) -> None:
        """Mask what `base` masks, with the forms it already derived (its tables are never changed in place)."""
        self._gates = dict(base._gates)
        self._shortest = base._shortest
        self._values = base._values

    def add(self, values: Iterable[str]) -> None:
        """Mask `values` too from now on (the step met them)."""
        room = _MAX_VALUES - len(self._values)
        new = set(islice((value for value in values if value and value not in self._values), max(room, 0)))
        if not new or not self.redaction.enabled:
            return
        placeholder = self.redaction.placeholder
        gates = {gate: list(texts) for gate, texts in self._gates.items()}
        for value in new:
            for text, gate in _masked_texts(value):
                # A text inside the placeholder would make scrubbing twice mask the placeholder itself.
                if text and text not in placeholder and text not in gates.setdefault(gate, []):
                    gates[gate].append(text)
        shortest = min((len(text) for texts in gates.values() for text in texts), default=SHORTEST_CREDENTIAL_CHARS)
        # Each attribute is replaced whole, values last: a reader on another thread sees a consistent state.
        self._gates = {gate: tuple(texts) for gate, texts in gates.items() if texts}
        self._shortest = min(SHORTEST_CREDENTIAL_CHARS, shortest)
        self._values = self._values | new

    def scrub(self, text: str) -> str:
        """`text` with every secret value and every credential-shaped substring replaced by the placeholder."""
        if len(text) < self._shortest:  # most strings leaving the process (names, schema words) are short
            return text
        # A step's prompt is scrubbed when rendered and again by the model wrapper: a text found clean is
        # not searched again until a value is added. `values` is read before the masked texts (`add` replaces
        # it last), so a text is only ever remembered as clean for values it was searched for.
        values = self._values
        remembered, clean = self._clean
        if remembered is values and text in clean:
            return text
        scrubbed = self.redaction.scrub_text(self.scrub_values(text))
        if scrubbed == text and len(text) <= _MAX_CLEAN_CHARS:
            if remembered is not values or len(clean) >= _MAX_CLEAN_TEXTS:
                clean = {}
                self._clean = (values, clean)
            clean[text] = None
        return scrubbed

    def scrub_values(self, text: str) -> str:
        """`text` with the secret values masked (credential shapes left to the caller's own rules)."""
        if not self._gates:
            return text
        lowered = text.lower()
        present = [value for gate, texts in self._gates.items() if gate in lowered for value in texts if value in text]
        if not present:
            return text
        placeholder = self.redaction.placeholder
        # Longest first, so a secret that contains another (a piece of it) is masked whole.
        ordered = tuple(sorted(set(present), key=lambda value: (-len(value), value)))
        return _literal_matcher(ordered).sub(lambda _match: placeholder, text)

    def scrub_data(self, data: T) -> T:
        """`data` with every string in it scrubbed: strings, lists, tuples, dicts and dataclass instances.

        Anything else is returned as is. Nothing is changed in place: a container or dataclass that holds a
        secret is copied, one that does not is returned itself.
        """
        return self._scrub_data(data, 0)  # type: ignore[no-any-return]

    def _scrub_data(self, data: object, depth: int) -> object:
        if isinstance(data, str):
            return self.scrub(data)
        if depth > 32:
            return data
        if isinstance(data, list):
            items = [self._scrub_data(item, depth + 1) for item in data]
            return items if any(a is not b for a, b in zip(items, data, strict=True)) else data
        if isinstance(data, tuple) and type(data) is tuple:
            items = [self._scrub_data(item, depth + 1) for item in data]
            return tuple(items) if any(a is not b for a, b in zip(items, data, strict=True)) else data
        if isinstance(data, dict):
            pairs = [(self._scrub_data(k, depth + 1), self._scrub_data(v, depth + 1)) for k, v in data.items()]
            changed = any(k2 is not k or v2 is not v for (k2, v2), (k, v) in zip(pairs, data.items(), strict=True))
            return dict(pairs) if changed else data
        if dataclasses.is_dataclass(data) and not isinstance(data, type):
            changes = {}
            for name in field_names(type(data)):
                value = getattr(data, name, None)
                scrubbed = self._scrub_data(value, depth + 1)
                if scrubbed is not value:
                    changes[name] = scrubbed
            if not changes:
                return data
            # A shallow copy keeps fields that `dataclasses.replace` could not pass (`init=False`).
            copied = copy.copy(data)
            for name, value in changes.items():
                object.__setattr__(copied, name, value)
            return copied
        return data


@lru_cache(maxsize=256)
def _literal_matcher(texts: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, texts)))


_DEFAULT = SecretScrubber()
_active: ContextVar[SecretScrubber | None] = ContextVar("nighthawk_secret_scrubber", default=None)


def current_scrubber() -> SecretScrubber:
    """The scrubber of the executing step; outside a step, one that masks credential shapes only."""
    return _active.get() or _DEFAULT


# --- collecting -------------------------------------------------------------------------------------


_environment_judged: tuple[ContextRedaction, dict[Any, Any], SecretScrubber] | None = None
"""The last environment judged: the rules, its raw entries and a scrubber of the secrets found in it."""


def _environment_scrubber(redaction: ContextRedaction) -> SecretScrubber:
    """A scrubber of the environment's secrets, for steps to start from (never made current, never added to)."""
    # `nh_eval("os.environ['DB_PASSWORD']")` reaches the environment without any variable in scope.
    # Every step asks (each item of a map): the variables are judged, and the masked forms of their secrets
    # derived, again only when the environment or the rules changed. `os.environ._data` holds the raw
    # entries, compared without decoding.
    global _environment_judged
    raw = getattr(os.environ, "_data", None)
    judged = _environment_judged
    if raw is not None and judged is not None and judged[1] == raw and (judged[0] is redaction or judged[0] == redaction):
        return judged[2]
    found = (
        value
        for name, value in os.environ.items()
        if name not in _NOT_SECRET_ENVIRONMENT and redaction.is_sensitive_name(name) and not looks_ordinary(value)
    )
    scrubber = SecretScrubber(redaction=redaction, values=found)
    if raw is not None:
        _environment_judged = (redaction, dict(raw), scrubber)
    return scrubber


def step_scrubber(
    redaction: ContextRedaction,
    *,
    step_locals: Mapping[str, object],
    step_globals: Mapping[str, object],
    reads: Iterable[str],
    interpolated: Iterable[str] = (),
) -> SecretScrubber:
    """The scrubber for a step as it starts: its parent's values, the credential-named environment variables,
    its own credential-named variables and globals, what its read bindings (`reads`) hold under credential
    names, and what the fields of an f-string block (`interpolated`, their sources) lead to."""
    scrubber = SecretScrubber(redaction=redaction)
    if not redaction.enabled:
        return scrubber
    scrubber._start_from(_environment_scrubber(redaction))
    parent = _active.get()
    if parent is not None:
        scrubber.add(parent.values)
    found: set[str] = set()
    # Names only: a variable's value is looked into when its name is a credential name. A module global
    # counts too (`DB_PASSWORD = ...` read by a helper the step calls), but nothing under any other global
    # name is looked at: a notebook namespace holds big tables, modules and the IPython shell.
    named = [(name, step_locals[name]) for name in _credential_names(step_locals.keys(), redaction)]
    named += [
        (name, step_globals[name])
        for name in _credential_names(step_globals.keys(), redaction)
        if name not in step_locals
    ]
    collect_into(named, redaction, found, scrubber._looked_at, secret=True)
    read = [(name, step_locals[name]) for name in reads if name in step_locals]
    collect_into(read, redaction, found, scrubber._looked_at)
    scrubber.add(found)
    # An f-string block's text already holds the values of its fields: they are looked up as if each field
    # were an expression the step runs (`{DB_PASSWORD}`, `{cfg["db"]["password"]}`, `{settings}`).
    for source in interpolated:
        _note_paths(source, step_locals, step_globals, scrubber)
    return scrubber


@lru_cache(maxsize=16)
def _tested_names(redaction: ContextRedaction) -> tuple[set[str], set[str]]:
    """The names `redaction` has already judged: (not credential names, credential names)."""
    return set(), set()


# Above this many remembered names the memory is dropped and names are judged again.
_MAX_TESTED_NAMES = 100_000


def _credential_names(names: KeysView[str], redaction: ContextRedaction) -> set[str]:
    """The credential names among `names`. Each name is judged once: a notebook namespace of thousands of
    names then costs one set difference per step."""
    plain, credential = _tested_names(redaction)
    if len(plain) > _MAX_TESTED_NAMES:
        plain.clear()
    for name in names - plain - credential:
        if isinstance(name, str):
            (credential if redaction.is_sensitive_name(name) else plain).add(name)
    return names & credential


# --- expressions ------------------------------------------------------------------------------------

# One step of a path from a name: an attribute (`.api_token`) or a constant subscript (`["password"]`).
_Path = tuple[str, tuple[tuple[str, object], ...]]


@lru_cache(maxsize=512)
def _paths(expression: str) -> tuple[tuple[_Path, ...], tuple[str, ...]]:
    """The names `expression` reads, each with the longest attribute and constant-key path taken from it;
    and every name, attribute and constant key it mentions (`vars(client)["client_secret"]` has no path)."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return (), ()
    paths: dict[_Path, None] = {}
    words: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words[node.id] = None
        elif isinstance(node, ast.Attribute):
            words[node.attr] = None
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            words[node.slice.value] = None
        steps: list[tuple[str, object]] = []
        current: ast.expr = node  # type: ignore[assignment]
        while True:
            if isinstance(current, ast.Attribute):
                steps.append(("attr", current.attr))
                current = current.value
            elif isinstance(current, ast.Subscript) and isinstance(current.slice, ast.Constant):
                steps.append(("item", current.slice.value))
                current = current.value
            else:
                break
        if isinstance(current, ast.Name) and (steps or isinstance(node, ast.Name)):
            paths[(current.id, tuple(reversed(steps)))] = None
    return tuple(paths), tuple(words)


_MISSING = object()


def _step_into(value: object, kind: str, key: object) -> object:
    """`value.key` or `value[key]` read without running user code (instance data only), else `_MISSING`."""
    if kind == "item":
        if isinstance(value, dict):
            return dict.get(value, key, _MISSING)
        if isinstance(value, (list, tuple)) and isinstance(key, int) and -len(value) <= key < len(value):
            return value[key]
        return _MISSING
    if isinstance(value, (type, ModuleType)) or not isinstance(key, str):
        return _MISSING
    try:
        attributes = object.__getattribute__(value, "__dict__")
    except AttributeError:
        attributes = None
    if isinstance(attributes, dict) and key in attributes:
        return attributes[key]
    if key in getattr(type(value), "__slots__", ()):
        try:
            return object.__getattribute__(value, key)
        except AttributeError:
            return _MISSING
    return _MISSING


def note_expression(expression: str, step_locals: Mapping[str, object], step_globals: Mapping[str, object]) -> bool:
    """Before `expression` runs in the current step: add the secrets its names lead to.

    A name, attribute or constant key that is a credential name makes the value there secret
    (`password.upper()`, `settings.api_token`, `conn["password"]`); any other value it reads is looked into
    for values under credential names (`str(conn)`). Modules and classes are never looked into.

    Returns whether the expression mentions a credential name at all: its value is then derived from a
    secret, and `note_value` is told so.
    """
    scrubber = _active.get()
    if scrubber is None or not scrubber.redaction.enabled:
        return False
    return _note_paths(expression, step_locals, step_globals, scrubber)


def _note_paths(
    expression: str, step_locals: Mapping[str, object], step_globals: Mapping[str, object], scrubber: SecretScrubber
) -> bool:
    """Add to `scrubber` the secrets the names of `expression` lead to; whether it mentions a credential name."""
    redaction = scrubber.redaction
    paths, words = _paths(expression)
    credential_words = {word for word in words if redaction.is_sensitive_name(word)}
    roots: list[tuple[str | None, object]] = []
    secrets: list[tuple[str | None, object]] = []
    for name, steps in paths:
        value = step_locals.get(name, _MISSING)
        if value is _MISSING:
            value = step_globals.get(name, _MISSING)
        if value is _MISSING or isinstance(value, ModuleType):
            continue
        sensitive = redaction.is_sensitive_name(name)
        for kind, key in steps:
            if is_table(value):
                # `words.token` names a column: what it gives is derived from a secret only when the column
                # holds credentials (a `token` column of words is data). The table is looked into below.
                credential_words -= _data_column_names(value, redaction)
                break
            child = _step_into(value, kind, key)
            if child is _MISSING:  # a method, a property, a module attribute: the path stops here
                break
            value = child
            sensitive = sensitive or (isinstance(key, str) and redaction.is_sensitive_name(key))
        (secrets if sensitive else roots).append((name, value))
    derived = bool(credential_words)
    found: set[str] = set()
    try:
        collect_into(secrets, redaction, found, scrubber._looked_at, secret=True)
        collect_into(roots, redaction, found, scrubber._looked_at)
    except Exception:  # looking for secrets must never fail the user's expression
        return derived
    scrubber.add(found)
    return derived


def _data_column_names(table: object, redaction: ContextRedaction) -> set[str]:
    """The credential-named columns of `table` that hold data, not credentials."""
    try:
        return {str(column.name) for column in credential_columns(table, redaction) if not column.holds_credentials}
    except Exception:  # an odd table-like object: its credential words count as usual
        return set()


def note_value(value: object, *, derived: bool = False) -> None:
    """After an expression ran in the current step: add what its value holds under credential names, or,
    when the expression was `derived` from a secret, the text of the value itself."""
    scrubber = _active.get()
    if scrubber is None or not scrubber.redaction.enabled or value is None or isinstance(value, (int, float, bool)):
        return
    found: set[str] = set()
    try:
        collect_into([(None, value)], scrubber.redaction, found, scrubber._looked_at, secret=derived)
    except Exception:
        return
    scrubber.add(found)


@contextmanager
def scrubbing_step(
    redaction: ContextRedaction,
    *,
    step_locals: Mapping[str, object],
    step_globals: Mapping[str, object],
    reads: Iterable[str],
    interpolated: Iterable[str] = (),
) -> Iterator[SecretScrubber]:
    """Make the scrubber of a step current (see `step_scrubber` for what it masks); an exception leaving the
    block has its messages scrubbed."""
    _install_log_scrubber()
    parent = _active.get()
    scrubber = step_scrubber(
        redaction, step_locals=step_locals, step_globals=step_globals, reads=reads, interpolated=interpolated
    )
    token = _active.set(scrubber)
    try:
        yield scrubber
    except BaseException as exc:
        scrub_exception(exc, scrubber)
        raise
    finally:
        _active.reset(token)
        if parent is not None:
            # A secret the inner step met may reach the parent's text through the inner step's result.
            parent.add(scrubber.values)


# --- exceptions and logs ----------------------------------------------------------------------------


def scrub_exception(exc: BaseException, scrubber: SecretScrubber | None = None) -> None:
    """Scrub the string arguments of `exc` and of its cause and context chain, in place.

    The caller is about to see (and a notebook to print) these messages. An exception whose `__str__` does
    not come from its arguments keeps its text.
    """
    scrubber = scrubber or current_scrubber()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        args = tuple(scrubber.scrub(arg) if isinstance(arg, str) else arg for arg in current.args)
        if any(a is not b for a, b in zip(args, current.args, strict=True)):
            try:
                current.args = args
            except (AttributeError, TypeError):
                pass
        message = getattr(current, "message", None)
        if isinstance(message, str):
            try:
                current.message = scrubber.scrub(message)  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
        current = current.__cause__ or current.__context__


class LogScrubber(logging.Filter):
    """Scrubs the message and the formatted traceback of every record of the logger it is attached to."""

    def filter(self, record: logging.LogRecord) -> bool:
        scrubber = current_scrubber()
        message = record.getMessage()
        scrubbed = scrubber.scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            # Handlers format the traceback from `exc_text` when it is set, so they print the scrubbed one.
            record.exc_text = scrubber.scrub(logging.Formatter().formatException(record.exc_info))
        return True


def _install_log_scrubber() -> None:
    # Every module logs through the one `nighthawk` logger. Installed when the first step starts rather than
    # at import, so importing nighthawk changes no logging configuration.
    logger = logging.getLogger("nighthawk")
    if not any(isinstance(existing, LogScrubber) for existing in logger.filters):
        logger.addFilter(LogScrubber())
