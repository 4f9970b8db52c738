"""The secret values of a step, and the one scrubber every outgoing text passes through.

`ContextRedaction` decides by *name* and by *shape* while a value is being rendered. That is not enough once
text leaves by another road: `nh_eval("db_password")` renders a bare string with no name attached, `str(conn)`
prints a password inside ordinary text, an exception message quotes it. So when a step starts, the runner
collects the *values* bound to sensitive names anywhere in the step's scope (at any depth of dicts, lists,
dataclasses, pydantic models and object attributes), plus credential-shaped strings and URL passwords, and
makes a `SecretScrubber` of them current for the whole step. Every way out then calls `current_scrubber()`:

* the model: `SecretScrubbingModel` (in `_secret_model.py`) scrubs every request before the real model, or a
  replay store, sees it;
* events: `events.emit` scrubs each event once, so displays, OpenTelemetry spans and any other listener only
  ever receive scrubbed text;
* exceptions: the runner scrubs the messages of an exception (and its cause chain) before it reaches the
  caller, and of the exception a `raise` outcome asks for;
* logs: `LogScrubber` is a filter on the `nighthawk` logger.

Only exact occurrences are masked: a reversed, re-cased, sliced or encoded form of a secret is different text,
and recognising those would mean guessing at every transformation a program can apply.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import TYPE_CHECKING, TypeVar

from .redaction import SHORTEST_CREDENTIAL_CHARS, ContextRedaction, _value_matcher, might_hold_credential

if TYPE_CHECKING:
    from .step import StepContext

__all__ = [
    "MIN_SECRET_VALUE_CHARS",
    "LogScrubber",
    "SecretScrubber",
    "collect_secret_values",
    "current_scrubber",
    "scrub_exception",
    "scrubbing_step",
]

T = TypeVar("T")

MIN_SECRET_VALUE_CHARS = 6
"""Shorter values bound to sensitive names are not collected: masking every `abc` or `name` in all outgoing
text would garble it. Such a value is still masked where it is shown under its name."""

# The walk of a step's scope is breadth first and bounded, so a huge namespace costs a bounded time per step;
# secrets near the top (a variable, a key of a config dict, an attribute of a client) are found first.
_MAX_NODES = 5_000
_MAX_DEPTH = 8
# Strings longer than this are not searched for credential shapes while collecting (they are still scrubbed
# by pattern wherever they are sent).
_MAX_SCANNED_CHARS = 8_192
# The password of `scheme://user:password@host`, so that `urlparse(dsn).password` is masked on its own too.
_URL_PASSWORD = re.compile(r"://[^/\s:@]*:([^/\s@]+)@")
# Environment variables the `pwd` name pattern matches by accident: they hold directories, not passwords.
_NOT_SECRET_ENVIRONMENT = frozenset({"PWD", "OLDPWD"})
_OPAQUE_TYPES = (type, ModuleType, FunctionType, BuiltinFunctionType, MethodType, int, float, complex, bool)


def _variants(value: str) -> Iterator[str]:
    """`value` and the escaped forms JSON and `repr` give it, each of which would disclose it."""
    yield value
    yield json.dumps(value)[1:-1]
    yield json.dumps(value, ensure_ascii=False)[1:-1]
    yield repr(value)[1:-1]


@dataclass(frozen=True, kw_only=True, eq=False)
class SecretScrubber:
    """Masks the collected secret values, then credential-shaped text, in anything about to leave."""

    redaction: ContextRedaction = field(default_factory=ContextRedaction)
    values: frozenset[str] = frozenset()
    """The exact texts masked wherever they occur."""
    _texts: tuple[str, ...] = field(init=False, repr=False, default=())
    _shortest: int = field(init=False, repr=False, default=0)
    """Text shorter than this can hold neither a secret value nor a credential shape."""

    def __post_init__(self) -> None:
        placeholder = self.redaction.placeholder
        # A value inside the placeholder would make scrubbing twice mask the placeholder itself.
        texts = {variant for value in self.values for variant in _variants(value) if variant and variant not in placeholder}
        # Longest first, so a secret that contains another is masked whole.
        ordered = tuple(sorted(texts, key=len, reverse=True)) if self.redaction.enabled else ()
        object.__setattr__(self, "_texts", ordered)
        shortest = min((len(text) for text in ordered), default=SHORTEST_CREDENTIAL_CHARS)
        object.__setattr__(self, "_shortest", min(shortest, SHORTEST_CREDENTIAL_CHARS))

    def scrub(self, text: str) -> str:
        """`text` with every secret value and every credential-shaped substring replaced by the placeholder."""
        if len(text) < self._shortest:  # most strings leaving the process (names, schema words) are short
            return text
        return self.redaction.scrub_text(self.scrub_values(text))

    def scrub_values(self, text: str) -> str:
        """`text` with the secret values masked (credential shapes left to the caller's own rules)."""
        # Substring tests find the few values present (usually none) far faster than one regex of them all.
        present = tuple(value for value in self._texts if value in text)
        if not present:
            return text
        placeholder = self.redaction.placeholder
        return _literal_matcher(present).sub(lambda _match: placeholder, text)

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
            for name in _field_names(type(data)):
                value = getattr(data, name, None)
                scrubbed = self._scrub_data(value, depth + 1)
                if scrubbed is not value:
                    changes[name] = scrubbed
            if not changes:
                return data
            import copy

            # A shallow copy keeps fields that `dataclasses.replace` could not pass (`init=False`).
            copied = copy.copy(data)
            for name, value in changes.items():
                object.__setattr__(copied, name, value)
            return copied
        return data


@lru_cache(maxsize=256)
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(item.name for item in dataclasses.fields(cls))


@lru_cache(maxsize=256)
def _literal_matcher(texts: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, texts)))


_DEFAULT = SecretScrubber()
_active: ContextVar[SecretScrubber | None] = ContextVar("nighthawk_secret_scrubber", default=None)


def current_scrubber() -> SecretScrubber:
    """The scrubber of the executing step; outside a step, one that masks credential shapes only."""
    return _active.get() or _DEFAULT


# --- collecting -------------------------------------------------------------------------------------


def _children(value: object) -> Iterator[tuple[str | None, object]]:
    """(name, child) pairs of a container or object, without running any user code but `__iter__` of builtins."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (key if isinstance(key, str) else None), item
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield None, item
    elif isinstance(value, _OPAQUE_TYPES):
        return
    elif dataclasses.is_dataclass(value):
        for item in dataclasses.fields(value):
            yield item.name, getattr(value, item.name, None)
    else:
        # `vars` reads the instance dictionary only: properties and `__getattr__` never run. Pydantic models
        # keep their fields there too.
        try:
            attributes = vars(value)
        except TypeError:
            attributes = {}
        if isinstance(attributes, dict):
            yield from ((name, item) for name, item in attributes.items() if isinstance(name, str))
        for name in getattr(type(value), "__slots__", ()):
            if isinstance(name, str) and not name.startswith("__"):
                try:
                    yield name, object.__getattribute__(value, name)
                except AttributeError:
                    continue


def _secret_text(value: object) -> str | None:
    """The text of a value that is secret whatever its name (pydantic's `SecretStr` and `SecretBytes`)."""
    if type(value).__name__ in ("SecretStr", "SecretBytes") and hasattr(value, "get_secret_value"):
        secret = value.get_secret_value()
        return secret.decode("utf-8", "replace") if isinstance(secret, bytes) else str(secret)
    return None


def collect_secret_values(
    roots: Iterable[tuple[str | None, object]], redaction: ContextRedaction
) -> frozenset[str]:
    """The secret texts reachable from `roots`, a sequence of (name, value) pairs.

    A string is secret when any name on its path is sensitive (`config["db"]["password"]`,
    `settings.api_token`, every string under `credentials = {...}`), when it is a `SecretStr`, or, for a
    part of it, when it has a credential shape or is the password of a URL.
    """
    if not redaction.enabled:
        return frozenset()
    found: set[str] = set()
    # id -> whether it was reached under a sensitive name; an object first met under an innocent name is
    # walked again when a sensitive one leads to it (`creds = settings["db"]`).
    seen: dict[int, bool] = {}
    sensitive: dict[str, bool] = {}  # the same field and key names come back for every row of a table
    queue: deque[tuple[str | None, object, int, bool]] = deque((name, value, 0, False) for name, value in roots)
    visited = 0
    while queue and visited < _MAX_NODES:
        name, value, depth, inherited = queue.popleft()
        visited += 1
        if inherited or name is None:
            secret = inherited
        elif (secret := sensitive.get(name)) is None:
            secret = sensitive[name] = redaction.is_sensitive_name(name)
        if isinstance(value, (str, bytes)):
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            if secret and len(text) >= MIN_SECRET_VALUE_CHARS:
                found.add(text)
            elif MIN_SECRET_VALUE_CHARS <= len(text) <= _MAX_SCANNED_CHARS:
                found.update(_shaped_parts(text, redaction))
            continue
        special = _secret_text(value)
        if special is not None:
            if len(special) >= MIN_SECRET_VALUE_CHARS:
                found.add(special)
            continue
        if value is None or depth >= _MAX_DEPTH or seen.get(id(value)) in (True, secret):
            continue
        seen[id(value)] = secret
        room = _MAX_NODES - visited - len(queue)
        try:
            # Children are taken lazily and only while the budget has room: a list of a million rows costs
            # what the budget allows, not a copy of the list.
            queue.extend(
                (child_name, child, depth + 1, secret) for child_name, child in islice(_children(value), max(room, 0))
            )
        except Exception:  # an odd object (a proxy, a container changed meanwhile) is skipped, never fatal
            continue
    return frozenset(found)


def _shaped_parts(text: str, redaction: ContextRedaction) -> Iterator[str]:
    """The credential-shaped substrings of `text`, and URL passwords on their own."""
    if not might_hold_credential(redaction.mask_value_patterns, text):
        return
    matcher = _value_matcher(redaction.mask_value_patterns)
    if matcher is not None:
        yield from (match.group(0) for match in matcher.finditer(text) if len(match.group(0)) >= MIN_SECRET_VALUE_CHARS)
    yield from (match.group(1) for match in _URL_PASSWORD.finditer(text) if len(match.group(1)) >= MIN_SECRET_VALUE_CHARS)


def _environment_secrets(redaction: ContextRedaction) -> Iterator[tuple[str, str]]:
    # `nh_eval("os.environ['DB_PASSWORD']")` reaches the environment without any variable in scope.
    for name, value in list(os.environ.items()):
        if name not in _NOT_SECRET_ENVIRONMENT and redaction.is_sensitive_name(name):
            yield name, value


def step_scrubber(step: StepContext) -> SecretScrubber:
    """The scrubber for `step`: the secrets of its locals, globals and the environment, plus its parent's."""
    redaction = step.rendering.redaction
    roots: list[tuple[str | None, object]] = [
        (name, value) for name, value in step.step_locals.items() if not name.startswith("__")
    ]
    roots += [
        (name, value)
        for name, value in step.step_globals.items()
        if not name.startswith("__") and name not in step.step_locals
    ]
    roots += _environment_secrets(redaction)
    values = collect_secret_values(roots, redaction)
    parent = _active.get()
    if parent is not None:
        values |= parent.values
    return SecretScrubber(redaction=redaction, values=values)


@contextmanager
def scrubbing_step(step: StepContext) -> Iterator[SecretScrubber]:
    """Make the scrubber of `step` current; an exception leaving the block has its messages scrubbed."""
    _install_log_scrubber()
    scrubber = step_scrubber(step)
    token = _active.set(scrubber)
    try:
        yield scrubber
    except BaseException as exc:
        scrub_exception(exc, scrubber)
        raise
    finally:
        _active.reset(token)


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
