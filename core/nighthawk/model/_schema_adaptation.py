"""A model's tool and output schemas adapted to its provider once per set of definitions, not on every request.

Before each request pydantic-ai walks every tool's JSON schema with the provider's transformer (about 0.2 ms
for a step's three tools: 7% of a map item's client CPU), though the steps of a block send the same tool
definitions each time. pydantic-ai's base adaptation replaces only the function tools, the output tools and
the output object, each from its own definition; so for the same definition objects its replacements can be
reused. A set is kept from its second request on (the agent makes new definitions on each run, and some
models a new output object on each request: such sets are never asked for again), with its definitions, so
that no other object can take their ids while it is kept.

This assumes what pydantic-ai does: a definition is replaced, never changed in place, once it has been sent.
A transformer's warnings are given for a set's first two requests only (Python shows each once anyway).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["adapt_schemas_once"]

_KEPT_SETS = 64
"""Sets of definitions a model keeps adapted: a block's steps use one set; more blocks, more sets."""


def adapt_schemas_once(model: Any) -> None:
    """Make `model` (a pydantic-ai model built here) reuse its adaptation of a set of definitions it has sent
    before. A model class with an adaptation of its own is left alone."""
    from pydantic_ai.models import Model

    if type(model).customize_request_parameters is Model.customize_request_parameters:
        model.customize_request_parameters = _Remembering(model, Model.customize_request_parameters)


@dataclass(frozen=True)
class _Adapted:
    sent: tuple[Any, ...]
    """The definitions as sent, kept so that their ids stay theirs."""
    function_tools: list[Any]
    output_tools: list[Any]
    output_object: Any


class _Remembering:
    """`customize_request_parameters` for one model: the base adaptation, reused for a set sent before."""

    def __init__(self, model: Any, adapt: Any) -> None:
        self._model = weakref.ref(model)  # the model holds this object: no cycle through it
        self._adapt = adapt
        self._lock = threading.Lock()  # one model may serve the event loops of several threads
        self._kept: OrderedDict[tuple[int, ...], _Adapted] = OrderedDict()
        self._seen: OrderedDict[tuple[int, ...], None] = OrderedDict()

    def __call__(self, parameters: Any) -> Any:
        function_tools, output_tools, output_object = (
            parameters.function_tools, parameters.output_tools, parameters.output_object
        )
        key = (*map(id, function_tools), -1, *map(id, output_tools), -1, id(output_object))
        with self._lock:
            kept = self._kept.get(key)
            again = False
            if kept is not None:
                self._kept.move_to_end(key)
            elif key in self._seen:
                del self._seen[key]
                again = True
            else:
                _remember(self._seen, key, None)
        if kept is not None:
            return replace(
                parameters,
                function_tools=list(kept.function_tools),
                output_tools=list(kept.output_tools),
                output_object=kept.output_object,
            )
        adapted = self._adapt(self._model(), parameters)
        if again:
            sent = (*function_tools, *output_tools, output_object)
            done = _Adapted(sent, list(adapted.function_tools), list(adapted.output_tools), adapted.output_object)
            with self._lock:
                _remember(self._kept, key, done)
        return adapted


def _remember(entries: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    entries[key] = value
    entries.move_to_end(key)
    if len(entries) > _KEPT_SETS:
        entries.popitem(last=False)
