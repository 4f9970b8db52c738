"""The ranked summary of a notebook's namespace (core/nighthawk/prompting/_namespace.py), called directly."""

from __future__ import annotations

import collections
import json
import math

from nighthawk.configuration import StepContextLimits
from nighthawk.prompting._mentions import Mentions
from nighthawk.prompting._namespace import render_namespace_summary
from nighthawk.prompting._tokens import estimate_tokens
from nighthawk.secrets import ContextRedaction


class CountingCounter:
    """The estimate, counting how many texts it was asked about."""

    name = "estimate"

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return estimate_tokens(text)


def summary(namespace: dict[str, object], counter: object, **limits: int) -> str:
    return render_namespace_summary(
        namespace,
        {"__name__": "__main__", **namespace},
        mentioned=Mentions(code=(), words=()),
        limits=StepContextLimits(**limits),
        style="default",
        counter=counter,  # type: ignore[arg-type]
        redaction=ContextRedaction(),
    )


def test_cutting_a_thousand_name_notebook_does_not_render_it_once_per_name() -> None:
    notebook: dict[str, object] = {f"reading_{i:04}": [i, i + 1, i + 2] for i in range(1000)}
    notebook.update({name: value for name, value in vars(math).items() if not name.startswith("_")})
    counter = CountingCounter()
    lines = summary(notebook, counter, locals_max_items=1000, locals_max_tokens=2000).splitlines()
    assert any(line.startswith("<snipped> ") for line in lines)
    # Each name left out costs nothing: the short lines stop at their budget.
    assert counter.calls < 100


def test_imports_are_listed_the_same_whatever_order_they_were_bound_in() -> None:
    # A star import binds in its module's `__all__` order, which numpy builds from a set: it changes per process.
    names = {"Counter": collections.Counter, "deque": collections.deque, "dumps": json.dumps, "loads": json.loads}
    forward = summary(dict(names), CountingCounter())
    backward = summary(dict(reversed(names.items())), CountingCounter())
    assert forward == backward == "imported: collections (Counter, deque), json (dumps, loads)"
