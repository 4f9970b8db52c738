"""Tests for `nighthawk.prompting._summaries`: the locals and globals summaries of the user prompt."""

from __future__ import annotations

import builtins
import dataclasses
import functools
import json
import logging
import sys

import pytest

from nighthawk.prompting._tokens import estimate_tokens
from nighthawk.configuration import StepContextLimits
from nighthawk.prompting._summaries import render_entry, render_globals_summary, render_locals_summary
from nighthawk.secrets import ContextRedaction


class EstimateCounter:
    name = "estimate"

    def count(self, text: str) -> int:
        return estimate_tokens(text)


def options(**limits):
    return {
        "limits": StepContextLimits(**limits),
        "style": "default",
        "counter": EstimateCounter(),
        "redaction": ContextRedaction(),
    }


def entry(name, value, **limits):
    return render_entry(name, value, **options(**limits))


INTENT = "  # intent: Return a deterministic sum for score calculation."


def add(base: int, bonus: int) -> int:
    """Return a deterministic sum for score calculation.

    The second paragraph is not shown.
    """
    return base + bonus


def multiply(base: int, bonus: int) -> int:
    return base * bonus


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class NoSignature:
    @property
    def __signature__(self):
        raise RuntimeError("no signature")

    def __call__(self):
        return None


# --- entry forms ----------------------------------------------------------------------------------------


def test_value_entry_shows_type_and_json():
    assert entry("scores", {"a": [1, 2]}) == 'scores: dict = {"a":[1,2]}'


def test_value_entry_is_bounded_by_value_max_tokens():
    line = entry("data", list(range(10**6)), value_max_tokens=24)
    assert line.startswith("data: list = [0,1,2") and line.endswith(",…(+999996)]") and len(line) <= len("data: list = ") + 40


def test_callable_entry_shows_signature_with_annotations_and_intent():
    assert entry("add", add) == "add: (base: int, bonus: int) -> int" + INTENT


def test_callable_without_docstring_has_no_intent():
    assert entry("multiply", multiply) == "multiply: (base: int, bonus: int) -> int"


def test_class_entry_shows_constructor_returning_the_class():
    assert entry("Point", Point) == "Point: (x: int, y: int = 0) -> Point"


def test_builtin_callable_keeps_its_own_docstring_as_intent():
    assert entry("length", len) == "length: (obj, /)  # intent: Return the number of items in a container."


def test_partial_uses_the_wrapped_function_intent():
    assert entry("bonus", functools.partial(add, 1)) == "bonus: (bonus: int) -> int" + INTENT


def test_large_default_is_shortened_in_signature():
    def fill(values=list(range(10**6))):
        return values

    assert entry("fill", fill) == "fill: (values=[0, 1, 2, 3, 4, 5, ...])"


def test_signature_failure_renders_unavailable():
    assert entry("probe", NoSignature()) == "probe: <callable; signature-unavailable>"


def test_generic_alias_renders_as_type():
    assert entry("Vector", list[float]) == "Vector: type = list[float]"


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 695 `type` statements need Python 3.12")
def test_type_alias_type_renders_underlying_type():
    namespace: dict = {}
    exec("type Scores = dict[str, int]", namespace)
    assert entry("Scores", namespace["Scores"]) == "Scores: type = dict[str, int]"


def test_module_renders_as_module():
    assert entry("json", json) == "json: module"


def test_sensitive_name_keeps_type_and_masks_value():
    assert entry("openai_api_key", "k-4f9a2c7e") == 'openai_api_key: str = "<masked>"'


def test_sensitive_looking_callable_still_shows_signature():
    def get_api_key() -> str:
        return ""

    assert entry("get_api_key", get_api_key) == "get_api_key: () -> str"


# --- locals summary -------------------------------------------------------------------------------------


def test_locals_are_sorted_by_name():
    summary = render_locals_summary({"b": 2, "a": 1, "C": 3}, **options())
    assert summary == "C: int = 3\na: int = 1\nb: int = 2"


def test_dunder_locals_are_skipped():
    assert render_locals_summary({"__name__": "m", "_private": 1}, **options()) == "_private: int = 1"


def test_empty_locals_render_empty_summary():
    assert render_locals_summary({"__builtins__": builtins}, **options()) == ""


def test_callables_with_same_signature_are_disambiguated():
    summary = render_locals_summary({"add": add, "multiply": multiply, "n": 1}, **options())
    assert summary.splitlines() == [
        "add: (base: int, bonus: int) -> int" + INTENT + "  # disambiguation: use add",
        "multiply: (base: int, bonus: int) -> int  # disambiguation: use multiply",
        "n: int = 1",
    ]


def test_items_limit_appends_snipped_marker():
    summary = render_locals_summary({f"v{i}": i for i in range(5)}, **options(locals_max_items=2))
    assert summary == "v0: int = 0\nv1: int = 1\n<snipped>"


def test_snipped_summary_logs_one_info_record(caplog):
    with caplog.at_level(logging.INFO, logger="nighthawk"):
        render_locals_summary({f"v{i}": i for i in range(5)}, **options(locals_max_items=2))
    assert [r.getMessage() for r in caplog.records if r.name == "nighthawk"] == [
        "locals summary snipped: 3 of 5 entries left out (limits: 8000 tokens, 2 items)"
    ]


def test_token_limit_appends_snipped_marker():
    summary = render_locals_summary({f"v{i}": "x" * 30 for i in range(10)}, **options(locals_max_tokens=30))
    lines = summary.splitlines()
    assert lines[-1] == "<snipped>" and 1 <= len(lines) - 1 < 10
    assert estimate_tokens(summary) <= 30 + len(lines)


def test_priority_names_survive_a_cut_but_output_stays_sorted():
    step_locals = {"a": 1, "b": 2, "result": 3, "z": 4}
    summary = render_locals_summary(step_locals, **options(locals_max_items=2), priority=["z", "result"])
    assert summary == "result: int = 3\nz: int = 4\n<snipped>"


def test_summary_with_huge_values_stays_bounded():
    step_locals = {"big": list(range(10**7)), "text": "x" * 10**7, "blob": b"\0" * 10**7}
    summary = render_locals_summary(step_locals, **options(value_max_tokens=20))
    assert len(summary) < 400


# --- globals summary ------------------------------------------------------------------------------------


def test_globals_exclude_names_bound_in_locals():
    summary = render_globals_summary(["limit", "rate"], {"limit": 1}, {"limit": 2, "rate": 0.5}, **options())
    assert summary == "rate: float = 0.5"


def test_globals_resolve_builtins_module():
    summary = render_globals_summary(["len"], {}, {"__builtins__": builtins}, **options())
    assert summary == "len: (obj, /)  # intent: Return the number of items in a container."


def test_globals_resolve_builtins_dict():
    summary = render_globals_summary(["abs"], {}, {"__builtins__": vars(builtins)}, **options())
    assert summary.startswith("abs: (x, /)")


def test_unresolvable_global_is_omitted_silently():
    assert render_globals_summary(["missing", "rate"], {}, {"rate": 1}, **options()) == "rate: int = 1"


def test_globals_are_sorted_and_deduplicated():
    summary = render_globals_summary(["b", "a", "b"], {}, {"a": 1, "b": 2}, **options())
    assert summary == "a: int = 1\nb: int = 2"


def test_globals_items_limit_appends_snipped_marker():
    summary = render_globals_summary(["a", "b", "c"], {}, {"a": 1, "b": 2, "c": 3}, **options(globals_max_items=1))
    assert summary == "a: int = 1\n<snipped>"
