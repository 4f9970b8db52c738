"""`%%natural -f` interpolation (nighthawk_ipython/_interpolate.py)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from nighthawk_ipython._interpolate import interpolate


def test_field_is_evaluated_in_the_namespace() -> None:
    assert interpolate("Use {n + 1} items.", {"n": 2}) == "Use 3 items."


def test_doubled_braces_are_literal() -> None:
    assert interpolate("{{x}} and }}", {}) == "{x} and }"


def test_conversion_and_format_spec_apply() -> None:
    assert interpolate("{name!r:>8}|{ratio:.1%}", {"name": "ab", "ratio": 0.25}) == "    'ab'|25.0%"


def test_nested_field_in_a_format_spec() -> None:
    assert interpolate("{x:{width}}", {"x": 1, "width": 3}) == "  1"


def test_colons_and_bangs_inside_brackets_and_strings_belong_to_the_expression() -> None:
    namespace = {"d": {"a:b": "colon"}, "xs": [0, 1, 2, 3], "a": 1, "b": 2}
    assert interpolate("{d['a:b']} {xs[1:3]} {a != b}", namespace) == "colon [1, 2] True"


def test_bindings_survive_interpolation() -> None:
    assert interpolate("Read <data> as {kind}.", {"kind": "csv"}) == "Read <data> as csv."


def test_unclosed_brace_raises_usage_error() -> None:
    with pytest.raises(UsageError, match=r"%%natural -f: '\{' is never closed; write '\{\{' for a literal brace \(cell line 2\)"):
        interpolate("ok\nbad {x", {"x": 1})


def test_single_closing_brace_raises_usage_error() -> None:
    with pytest.raises(UsageError, match=r"%%natural -f: single '\}' is not allowed"):
        interpolate("a } b", {})


def test_empty_field_raises_usage_error() -> None:
    with pytest.raises(UsageError, match=r"%%natural -f: empty expression in '\{\}'"):
        interpolate("a {} b", {})


def test_unknown_name_raises_name_error() -> None:
    with pytest.raises(NameError, match="name 'missing' is not defined"):
        interpolate("{missing}", {})
