"""YAML text of a replay store: written with one file line per prompt line, read back as plain data only.

PyYAML is imported on first use, so importing the replay package stays cheap until a store is touched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import NighthawkError

__all__ = ["load_document", "to_yaml", "yaml_part"]


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


def to_yaml(data: Any) -> str:
    """`data` as the YAML text of a store: keys in their order, multi-line strings as literal blocks."""
    import yaml

    # No line folding: a very long line stays one line, and the file loads back to the same strings.
    return yaml.dump(data, Dumper=_yaml_dumper(), sort_keys=False, allow_unicode=True, width=1_000_000)


def yaml_part(data: Any) -> str:
    """`to_yaml(data)` as a piece of a larger document: without the `...` end marker PyYAML writes after a
    final block scalar that keeps its trailing newlines (`|+`), which would end the document early."""
    text = to_yaml(data)
    return text[: -len("...\n")] if text.endswith("\n...\n") else text


# Tags a store may spell out; anything else (Python objects, sets, timestamps, custom tags) is refused.
_PLAIN_TAGS = frozenset(
    {None, "!"} | {f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map")}
)


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


def load_document(text: str, fail: Callable[..., NighthawkError]) -> Any:
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
