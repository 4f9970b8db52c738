"""Tests for `nighthawk.prompting._render`: bounded rendering of any value, styles, masking and determinism."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

import pydantic
import pytest

from nighthawk.prompting._render import render_value
from nighthawk.prompting._reprs import type_name
from nighthawk.prompting._tokens import estimate_tokens
from nighthawk.secrets import ContextRedaction


class EstimateCounter:
    name = "estimate"

    def count(self, text: str) -> int:
        return estimate_tokens(text)


class CharCounter:
    """Counts one token per character, so the first character budget is always too large."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


def render(value, *, max_tokens=50, style="default", counter=None, redaction=None):
    return render_value(
        value,
        max_tokens=max_tokens,
        style=style,
        counter=counter or EstimateCounter(),
        redaction=redaction or ContextRedaction(),
    )


class CountingSequence(Sequence):
    """A huge sequence that counts how many items are read."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.reads = 0

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index):
        if isinstance(index, slice) or not 0 <= index < self.length:
            raise IndexError(index)
        self.reads += 1
        return index


class CountingMapping(Mapping):
    """A huge mapping that counts how many values are read."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.reads = 0

    def __len__(self) -> int:
        return self.length

    def __iter__(self):
        return iter(range(self.length))

    def __getitem__(self, key):
        self.reads += 1
        return key


class RecordingRedaction(ContextRedaction):
    """Records the length of every text handed to `scrub_text`."""

    def scrub_text(self, text: str) -> str:
        object.__getattribute__(self, "seen").append(len(text))
        return super().scrub_text(text)


def recording_redaction() -> RecordingRedaction:
    redaction = RecordingRedaction()
    object.__setattr__(redaction, "seen", [])
    return redaction


# --- bounded cost ---------------------------------------------------------------------------------------


def test_huge_sequence_reads_a_bounded_number_of_items():
    value = CountingSequence(10**7)
    render(value, max_tokens=50)
    assert 0 < value.reads <= 200


def test_huge_mapping_reads_a_bounded_number_of_values():
    value = CountingMapping(10**6)
    render(value, max_tokens=50)
    assert 0 < value.reads <= 200


@pytest.mark.parametrize("value", [list(range(10**6)), {i: i for i in range(10**5)}, set(range(10**5))])
def test_large_container_output_stays_within_budget(value):
    assert len(render(value, max_tokens=50)) <= 200


def test_huge_string_is_scrubbed_only_in_a_bounded_window():
    redaction = recording_redaction()
    out = render("x" * 10**7, max_tokens=50, redaction=redaction)
    assert len(out) <= 200 and max(redaction.seen) <= 200 + 512


def test_huge_bytes_render_a_short_prefix():
    out = render(b"\x00" * 10**7, max_tokens=20)
    assert out.startswith('"b\'\\\\x00') and out.endswith('…"') and len(out) <= 80


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 23_592, '"<image/png, 23.6 kB>"'),
        (bytearray(b"\xff\xd8\xff\xe0" + b"\x00" * 2_000_000), '"<image/jpeg, 2.0 MB>"'),
        (memoryview(b"%PDF-1.4\n" + b"\x00" * 500), '"<application/pdf, 509 B>"'),
    ],
)
def test_image_and_pdf_bytes_render_as_their_type_and_size(data, shown):
    assert render(data, style="detailed") == shown


def test_image_bytes_inside_a_record_render_as_their_type_and_size():
    assert render({"name": "logo", "png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 92}) == '{"name":"logo","png":"<image/png, 100 B>"}'


def test_generator_is_not_consumed():
    def numbers():
        pytest.fail("the generator was consumed")
        yield 1

    assert render(numbers()) == '"<generator>"'


def test_iterator_inside_a_list_is_not_consumed():
    iterator = iter([1, 2, 3])
    render([iterator])
    assert next(iterator) == 1


def test_deep_nesting_is_cut_without_recursion_error():
    value: list = []
    for _ in range(10_000):
        value = [value]
    out = render(value, max_tokens=200)
    assert out.startswith("[[[[") and "…" in out


def test_cycle_renders_a_marker():
    value: list = [1]
    value.append(value)
    assert render(value) == '[1,"<cycle>"]'


def test_huge_int_renders_its_size():
    assert render(10**10000) == '"<int with about 10001 digits>"'


def test_result_fits_token_budget_when_first_guess_is_too_large():
    out = render({"a": "x" * 1000, "b": list(range(1000))}, max_tokens=40, counter=CharCounter())
    assert len(out) <= 40


# --- hostile objects ------------------------------------------------------------------------------------


class BrokenRepr:
    def __repr__(self) -> str:
        raise ValueError("boom")


def test_failing_repr_renders_its_error_type():
    assert render(BrokenRepr()) == '"<repr failed: ValueError>"'


class BrokenLength(Sequence):
    def __len__(self) -> int:
        raise RuntimeError("no length")

    def __getitem__(self, index):
        raise IndexError(index)


def test_failing_len_renders_its_error_type():
    assert render(BrokenLength()) == '"<render failed: RuntimeError>"'


class Plain:
    pass


def test_default_repr_has_no_memory_address():
    out = render(Plain())
    assert out.endswith('Plain object>"') and " at 0x" not in out


class WithAttributes:
    def __init__(self) -> None:
        self.name = "n"
        self.password = "hunter2"
        self._hidden = 1


def test_object_with_default_repr_shows_public_attributes_masked():
    assert render(WithAttributes()) == '{"name":"n","password":"<masked>"}'


# --- value kinds ----------------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "true"),
        (1.5, "1.5"),
        (Color.RED, '"Color.RED"'),
        (datetime.date(2024, 1, 2), '"2024-01-02"'),
        (decimal.Decimal("1.10"), '"1.10"'),
        (uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
        (PurePosixPath("/tmp/x"), '"/tmp/x"'),
        ((1, "a"), '[1,"a"]'),
        (frozenset({"b", "a"}), '["a","b"]'),
        ({1: "a", None: "b"}, '{"1":"a","null":"b"}'),
        (range(3), "[0,1,2]"),
        (float("nan"), "NaN"),
        (int, '"<class int>"'),
    ],
)
def test_value_kinds_render_as_json_like_text(value, expected):
    assert render(value) == expected


@dataclasses.dataclass
class Account:
    owner: str
    api_key: str
    cache: dict = dataclasses.field(default_factory=dict, repr=False)


def test_dataclass_renders_fields_masked_and_hides_repr_false_fields():
    assert render(Account(owner="o", api_key="k-4f9a2c7e")) == '{"owner":"o","api_key":"<masked>"}'


class User(pydantic.BaseModel):
    name: str
    token: str


def test_pydantic_model_renders_fields_masked():
    assert render(User(name="u", token="t0k-91af")) == '{"name":"u","token":"<masked>"}'


class FakeArray:
    """Looks like a numpy array of shape (10**6, 3); fails on any whole-array access."""

    dtype = "float64"

    def __init__(self, shape=(10**6, 3)) -> None:
        self.shape = shape

    def __getitem__(self, index):
        if len(self.shape) == 1:
            return FakeScalar(index)
        return FakeArray(self.shape[1:])

    def tolist(self):
        raise AssertionError("tolist on the whole array")

    def __repr__(self) -> str:
        raise AssertionError("repr of the whole array")


class FakeScalar:
    dtype = "float64"
    shape = ()

    def __init__(self, value) -> None:
        self.value = value

    def item(self):
        return float(self.value)


def test_array_like_renders_shape_dtype_and_leading_rows():
    out = render(FakeArray(), max_tokens=120)
    assert out.startswith('{"shape":[1000000,3],"dtype":"float64","data":[[0.0,1.0,2.0],[0.0,1.0,2.0],')


class FakeFrame:
    """Looks like a pandas DataFrame; only a 5x20 `iloc` slice may be read."""

    shape = (10**6, 2)
    columns = ("a", "b")
    dtypes = property(lambda self: pytest.fail("dtypes of the whole frame"))

    @property
    def iloc(self):
        return FakeILoc()

    def __repr__(self) -> str:
        raise AssertionError("repr of the whole frame")


class FakeILoc:
    def __getitem__(self, key):
        rows, columns = key
        assert (rows.stop, columns.stop) == (5, 20)
        return FakeSmallFrame()


class FakeSmallFrame:
    dtypes = {"a": "int64", "b": "object"}

    def to_dict(self, orient):
        assert orient == "split"
        return {"index": [0], "columns": ["a", "b"], "data": [[1, "x"]]}


def test_dataframe_like_renders_shape_column_dtypes_and_head_rows():
    assert render(FakeFrame(), max_tokens=100) == (
        '{"shape":[1000000,2],"columns":{"a":"int64","b":"object"},"rows":[[1,"x"]]}'
    )


# --- styles ---------------------------------------------------------------------------------------------

TRUNCATED_VALUES = [
    list(range(10**5)),
    {"rows": [{"id": i, "text": "y" * 200} for i in range(100)], "total": 100},
    "z" * 10_000,
    [[1, [2, [3, [4, [5]]]]]] * 50,
    {i: {"n": i} for i in range(1000)},
]


@pytest.mark.parametrize("value", TRUNCATED_VALUES)
def test_strict_style_is_valid_json_when_truncated(value):
    json.loads(render(value, max_tokens=30, style="strict"))


def test_strict_style_omits_item_markers():
    assert render(list(range(100)), max_tokens=22, style="strict") == "[0,1,2,3,4,5,6,7]"


def test_default_style_marks_omitted_items_with_their_count():
    assert render(list(range(100)), max_tokens=18, style="default") == "[0,1,2,3,4,…(+95)]"


def test_detailed_style_counts_omitted_items():
    assert render(list(range(100)), max_tokens=30, style="detailed") == "[0,1,2,3,4,5,6,7,8,/* 91 more */]"


def test_default_style_cuts_strings_with_ellipsis():
    assert render("abcdefghij" * 10, max_tokens=7) == '"abcdefghijabcd…"'


def test_detailed_style_counts_omitted_characters():
    assert render("a" * 100, max_tokens=18, style="detailed") == '"' + "a" * 25 + '…"/* 75 more chars */'


def test_truncation_keeps_every_key_of_a_small_dict():
    out = render({"first": "x" * 1000, "second": "y" * 1000}, max_tokens=40)
    assert out.startswith('{"first":"xxx') and '"second":"yyy' in out


# --- masking --------------------------------------------------------------------------------------------


def test_nested_sensitive_key_is_masked():
    assert render({"config": {"db_password": "hunter2", "host": "h"}}) == (
        '{"config":{"db_password":"<masked>","host":"h"}}'
    )


def test_credential_inside_a_string_is_scrubbed():
    assert render(["use sk-abcdefghijklmnopqrstuvwx1234 here"]) == '["use <masked> here"]'


def test_credential_straddling_the_cut_is_scrubbed():
    out = render("." * 30 + "sk-abcdefghijklmnopqrstuvwx1234", max_tokens=10)
    assert "sk-" not in out


def test_disabled_redaction_shows_sensitive_keys():
    assert render({"api_key": "k"}, redaction=ContextRedaction(enabled=False)) == '{"api_key":"k"}'


# --- arguments and helpers ------------------------------------------------------------------------------


def test_non_positive_budget_is_rejected():
    with pytest.raises(ValueError, match=r"`max_tokens` must be a positive int, got 0"):
        render(1, max_tokens=0)


def test_unknown_style_is_rejected():
    with pytest.raises(ValueError, match=r"`style` must be one of .*got 'pretty'"):
        render(1, style="pretty")


def test_type_name_of_local_class_is_its_bare_name():
    class Local:
        pass

    assert type_name(Local()) == "Local"


def test_type_name_of_nested_class_is_qualified():
    class Outer:
        class Inner:
            pass

    assert [type_name(1), type_name(Outer.Inner())] == ["int", "Inner"]


def test_huge_dict_key_is_cut():
    out = render({"k" * 10**6: 1}, max_tokens=50)
    assert out.startswith('{"kkk') and out.endswith('…":1}') and len(out) <= 200


# --- previews that keep meaning -------------------------------------------------------------------------


def records(count: int) -> list[dict[str, object]]:
    return [
        {"customer_identifier": f"C{i:05}", "lifetime_score": i / 7, "region_of_sale": "north", "note": "n" * 300}
        for i in range(count)
    ]


def test_first_records_of_a_long_list_show_every_key_whole():
    out = render(records(5_000), max_tokens=200)
    head = out[: out.index("}")]
    for key in ("customer_identifier", "lifetime_score", "region_of_sale", "note"):
        assert f'"{key}":' in head


def test_long_list_of_records_says_how_many_items_are_left_out():
    out = render(records(5_000), max_tokens=200)
    shown = out.count('"customer_identifier":')
    assert out.endswith(f"…(+{5_000 - shown})]")


def test_long_string_value_is_cut_before_keys_of_the_record():
    out = render(records(1), max_tokens=60)
    assert '"note":"nnn' in out and "…" in out
    assert all(f'"{key}":' in out for key in ("customer_identifier", "lifetime_score", "region_of_sale", "note"))


def test_key_that_does_not_fit_leaves_the_entry_out_instead_of_cutting_it():
    out = render({"short": 1, "a_rather_long_key_name_for_a_field": 2}, max_tokens=6)
    assert "a_rather" not in out or '"a_rather_long_key_name_for_a_field":' in out


def test_pandas_dataframe_preview_shows_shape_columns_with_dtypes_and_what_they_hold_then_rows():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"city": ["Oslo", "Lima"] * 500, "temperature": [3.5, 18.25] * 500})
    out = render(frame, max_tokens=200)
    assert out.startswith('{"shape":[1000,2],"columns":{"city":"')  # `object` or `str`, by pandas version
    assert '"temperature":"float64 3.5..18.25"},"rows":[["Oslo",3.5],["Lima",18.25],' in out


# --- lists of numbers (taken in C) and keys rendered once per value ---------------------------------------


class Readings(list):
    """A user's list type: rendered item by item, the general way."""


NUMBER_LISTS = [
    list(range(10**5)),
    [i / 7 for i in range(2000)],
    [-0.0, 1e-308, -1.2345678901234567e-100, 10**29, -(10**29), 2.5, 7],
    [1, 2, float("nan"), 3],
    [float("inf"), 1.0],
    [10**30, 1],
    [2**5000, 1],
    [True, 1, 0],
    [10**40 + i for i in range(50)],
]


@pytest.mark.parametrize("numbers", NUMBER_LISTS, ids=range(len(NUMBER_LISTS)))
@pytest.mark.parametrize("style", ["strict", "default", "detailed"])
def test_a_list_or_tuple_of_numbers_renders_as_the_same_numbers_in_any_list(numbers: list, style: str) -> None:
    for max_tokens in (1, 3, 10, 60, 400):
        general = render(Readings(numbers), max_tokens=max_tokens, style=style, counter=EstimateCounter())
        assert render(numbers, max_tokens=max_tokens, style=style, counter=EstimateCounter()) == general
        assert render(tuple(numbers), max_tokens=max_tokens, style=style, counter=EstimateCounter()) == general


def test_keys_render_the_same_in_every_walk_of_a_value() -> None:
    # The first character budget is too large for this counter, so the value is walked again, smaller:
    # the keys met again are those of the first walk, quoted and masked the same way.
    value = {'a "quoted" key': 1, "api_token": "sk-live-4f9a8b7c6d5e4f3a2b1c", "line\nbreak": [1, 2], "plain": "x"}
    shown = render(value, max_tokens=50, counter=CharCounter())
    assert shown == '{"a \\"quoted\\" key":1,"api_token":"<masked>",…(+2)}'


def test_a_credential_key_met_before_still_masks_its_new_value() -> None:
    # Keys are remembered across renderings (the steps of a map read the same dict); values never are.
    assert render({"api_token": "sk-live-4f9a8b7c6d5e4f3a2b1c"}) == '{"api_token":"<masked>"}'
    assert render({"api_token": "sk-live-9z8y7x6w5v4u3t2s1r0q"}) == '{"api_token":"<masked>"}'
    assert render({"api_token": None}) == '{"api_token":null}'


# --- previews that show data ------------------------------------------------------------------------------


def test_a_counter_shows_its_most_common_items_first():
    counts = collections.Counter({("good", "value"): 2, ("too", "small"): 9, ("fast", "delivery"): 5})
    assert render(counts, max_tokens=100) == '{"(\'too\', \'small\')":9,"(\'fast\', \'delivery\')":5,"(\'good\', \'value\')":2}'


def test_a_series_by_date_shows_readable_dates_and_floats_as_pandas_displays_them():
    pandas = pytest.importorskip("pandas")
    daily = pandas.Series([65409.829999999994, 1.5], index=pandas.to_datetime(["2023-01-01", "2023-01-02"]))
    out = render(daily, max_tokens=200)
    assert '"head":{"2023-01-01":65409.83,"2023-01-02":1.5}' in out
    assert '"index":"DatetimeIndex 2023-01-01..2023-01-02"' in out


def test_a_fitted_estimator_shows_what_it_learned_with_shapes():
    numpy = pytest.importorskip("numpy")
    linear_model = pytest.importorskip("sklearn.linear_model")
    model = linear_model.LinearRegression().fit(numpy.arange(30.0).reshape(10, 3), numpy.arange(10.0))
    out = render(model, max_tokens=200)
    assert out.startswith('{"repr":"LinearRegression()",')
    assert '"coef_":{"shape":[3],"dtype":"float64"' in out and '"intercept_":' in out


def test_a_repeated_value_is_said_once():
    numpy = pytest.importorskip("numpy")
    assert render(numpy.full(33, 0.5), max_tokens=100) == '{"shape":[33],"dtype":"float64","all":0.5}'
