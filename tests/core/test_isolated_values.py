"""A value crosses from the isolated child to the kernel as plain values and calls of the kernel's own builders of
data, each checking its arguments; the kernel's unpickler names nothing else. The child runs the model's code,
which can write its answer itself, so these tests write answers as an attacker would (the roads two reviews
found into an unpickler held to "data classes": `map`, numpy's and pandas' reconstructors handed objects whose
methods they call, `BUILD` on shared objects, forged arrays, time zones read from any path, sizes and texts that
cost hours or gigabytes): each is refused, and nothing runs. The values an analysis makes still come back equal.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import pathlib
import pickle
import sys
import types
import typing
import uuid
import zoneinfo

import numpy as np
import pandas as pd
import pydantic
import pydantic_ai.messages  # noqa: F401 - an installed package's dataclasses, loaded
import pytest

from nighthawk.oversight.isolation import _builders, _python_values, _values
from nighthawk.oversight.isolation._builders import BUILDERS
from nighthawk.oversight.isolation._value_forms import dumps_value
from nighthawk.oversight.isolation._values import UnsafeValueError, unpickle_data


def global_(module: str, name: str) -> bytes:
    """The opcodes that push `module`'s attribute `name` (protocol 4's STACK_GLOBAL)."""
    return b"".join(pickle.SHORT_BINUNICODE + bytes([len(text)]) + text.encode() for text in (module, name)) + pickle.STACK_GLOBAL


def call(function: bytes, *arguments: object) -> bytes:
    """A pickle that calls `function` with `arguments` (pickled as they are)."""
    return pickle.PROTO + b"\x05" + function + pickle.dumps(tuple(arguments), protocol=5)[2:-1] + pickle.REDUCE + pickle.STOP


def builder(name: str, *arguments: object) -> bytes:
    """A call of the builder `name`, its arguments in the forms a child sends (arrays and indexes as builders' calls
    too), so that only the builder's own checks can refuse it."""
    return pickle.PROTO + b"\x05" + global_(BUILDERS[name].__module__, name) + dumps_value(tuple(arguments))[2:-1] + pickle.REDUCE + pickle.STOP


class Recorder:
    """A user's class whose `__init__` acts: the child must not get to call it."""

    made: typing.ClassVar[list[object]] = []

    def __init__(self, state: object) -> None:
        Recorder.made.append(state)


# --- nothing but the builders is named or called ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "name"),
    [("builtins", "map"), ("builtins", "getattr"), ("builtins", "eval"), ("copyreg", "_reconstructor"), ("numpy", "dtype"),
     ("numpy._core.multiarray", "scalar"), ("pandas.core.indexes.interval", "_new_IntervalIndex"), ("pandas.core.indexes.base", "_new_Index"),
     ("pyarrow.lib", "_restore_array"), ("types", "SimpleNamespace"), ("fractions", "Fraction"), (__name__, "Recorder"),
     (_python_values.__name__, "_class"), (_python_values.__name__, "user_class"), (_values.__name__, "pickle"),
     (_builders.__name__, "BUILDERS"), (_values.__name__, "range_")],
)
def test_an_answer_names_nothing_but_the_builders(module: str, name: str) -> None:
    with pytest.raises(UnsafeValueError, match="not one of the kernel's builders"):
        unpickle_data(call(global_(module, name), "chosen by the child"))
    assert Recorder.made == []


@pytest.mark.parametrize("opcode", [pickle.NEWOBJ, pickle.NEWOBJ_EX, pickle.BUILD, pickle.INST, pickle.OBJ, pickle.EXT1, pickle.BINPERSID])
def test_an_answer_builds_no_object_and_sets_no_state_itself(opcode: bytes) -> None:
    # NEWOBJ made any class; BUILD set the state of what a call returned (an enum member shared by the whole
    # kernel, a class): refused before it reads its operands.
    payload = pickle.PROTO + b"\x05" + pickle.EMPTY_TUPLE + pickle.EMPTY_DICT + opcode + pickle.STOP
    with pytest.raises(UnsafeValueError, match="builds an object or sets its state"):
        unpickle_data(payload)


def test_a_builder_is_never_handed_on_as_a_value() -> None:
    # As a value, a builder could be set as an object's method and called later, by the kernel's own code.
    listed = pickle.PROTO + b"\x05" + pickle.EMPTY_LIST + global_(_python_values.__name__, "range_") + pickle.APPEND + pickle.STOP
    with pytest.raises(UnsafeValueError, match="hands on one of the kernel's builders as a value"):
        unpickle_data(listed)
    with pytest.raises(UnsafeValueError, match="is one of the kernel's builders, not a value"):
        unpickle_data(pickle.PROTO + b"\x05" + global_(_python_values.__name__, "range_") + pickle.STOP)


class Built:
    """A value a builder makes, then filled by an opcode that calls its own `append`, `__setitem__` or `extend`."""

    def __init__(self, name: str, *arguments: object, items: list[object] | None = None, pairs: list[tuple[object, object]] | None = None) -> None:
        self.name, self.arguments, self.items, self.pairs = name, arguments, items, pairs

    def __reduce__(self) -> tuple[object, ...]:
        return (BUILDERS[self.name], self.arguments, None, self.items and iter(self.items), self.pairs and iter(self.pairs))


@pytest.mark.parametrize(
    "payload",
    [
        # numpy's `__setitem__` with a namespace whose `__array_interface__` points anywhere: a read of the kernel's memory
        Built("array_", "|u1", (8,), False, bytes(8), pairs=[(Built("slice_", None, None, None), Built("namespace_", {"x": 1}))]),
        Built("range_index_", 0, 10, 1, None, items=[Built("range_index_", 0, 10**7, 1, None)]),  # `append` materialises both
        Built("deque_", [], None, items=[1]),  # a chain of deques filled after nesting crashed the kernel as it was freed
    ],
    ids=["array-setitem", "range-index-append", "deque-append"],
)
def test_only_a_plain_list_dict_or_set_is_filled(payload: Built) -> None:
    with pytest.raises(UnsafeValueError, match="fills a"):
        unpickle_data(pickle.dumps(payload, protocol=4))


# --- each builder checks what it is given -------------------------------------------------------------------------


REFUSED = {
    "object dtype from raw bytes": builder("array_", "O", (1,), False, bytes(8)),  # raw bytes read as pointers
    "structured dtype with an object field": builder("array_", [("a", "O"), ("b", "<i8")], (1,), False, bytes(16)),
    "shape its bytes do not fill": builder("array_", "<f8", (10**6,), False, bytes(8)),
    "negative shape": builder("array_", "<f8", (-1,), False, bytes(8)),
    "object scalar from raw bytes": builder("scalar_", "O", bytes(8)),
    "object array longer than its items": builder("object_array_", (10**9,), []),
    "multi-index codes past its levels": builder("multi_index_", [pd.Index(range(3))], [np.array([0, 5])], [None]),
    "categorical codes past its categories": builder("categorical_", np.array([0, 7], dtype="int8"), pd.Index(["a"]), False),
    "fraction parsed from text": builder("fraction_", "1e1000000000", 1),  # hours of arithmetic
    "decimal of 20,000 digits": builder("decimal_", "1" * 20_000),
    "timestamp parsed from text": builder("timestamp_", "1" * 800_000, "ns", None),  # quadratic in pandas' parser
    "time zone read from a path by dateutil": builder("datetime_", "2026-01-01", "dateutil//etc/passwd"),
    "time zone as a relative path": builder("datetime_", "2026-01-01", "../../../etc/passwd"),
    "arrow dtype naming a dateutil zone": builder("extension_", "timestamp[ns, tz=dateutil//etc/passwd][pyarrow]", []),
    "defaultdict factory that is not a plain type": builder("default_dict_", "eval", []),
    "installed package's class": builder("instance_", "httpx", "Client", {}),
    "Nighthawk's own class": builder("instance_", "nighthawk.oversight.isolation._parent", "_Alone", {}),
    "dunder field": builder("instance_", __name__, "Recorder", {"__class__": 1}),
    "enum that is not one": builder("enum_", __name__, "Recorder", 1),
    "named tuple that is not one": builder("named_tuple_", "builtins", "tuple", (1,)),
    "frame index longer than its columns": builder("frame_", [np.arange(3)], pd.RangeIndex(10**9), pd.Index(["a"])),
    "series index longer than its values": builder("series_", np.arange(3), pd.RangeIndex(10**9), None),
    "range of text": builder("range_", "1", 2, 1),
    "namespace with a numpy protocol": builder("namespace_", {"__array_interface__": {"data": (8, False), "shape": (8,), "typestr": "|u1"}}),
    "namespace with an IPython display method": builder("namespace_", {"_repr_html_": 1}),
    "intervals with range sides": builder("intervals_", pd.RangeIndex(10**7), pd.RangeIndex(1, 10**7 + 1), "left"),
    "multi-index level far longer than its codes": builder("multi_index_", [pd.RangeIndex(5 * 10**7)], [np.zeros(1, dtype="int8")], [None]),
    "categories far more than the codes": builder("categorical_", np.zeros(1, dtype="int8"), pd.RangeIndex(10**7), False),
    "pydantic model with an invalid field": builder("instance_", __name__, "Reading", {"sensor": "t", "value": "not a number"}),
    "installed package's dataclass": builder("instance_", "pydantic_ai.messages", "TextPart", {"content": "x"}),
    "flag value beyond its flags": builder("enum_", "re", "RegexFlag", 1 << 40),
    "enum value it does not have": builder("enum_", __name__, "Color", 99),
    "times that do not follow their frequency": builder("index_", np.array(["2026-01-01", "2026-01-05"], dtype="M8[ns]"), None, "D"),
    "frequency on an index of numbers": builder("index_", np.arange(3), None, "D"),
    "attrs that are not a mapping": builder("series_", np.arange(2), pd.RangeIndex(2), None, [("a", 1)]),
    "fold that is neither 0 nor 1": builder("datetime_", "2026-10-25T02:30", None, 7),
    "fold that is a flag": builder("datetime_", "2026-10-25T02:30", None, True),
    "frequency too slow to check against its times": builder(
        "index_", pd.date_range("2026", periods=20_000, freq="WOM-1MON").to_numpy(), None, "WOM-1MON"
    ),  # pandas steps through each time in Python: seconds for a few hundred thousand
    "attrs holding an array": builder("series_", np.arange(2), pd.RangeIndex(2), None, {"big": np.zeros(4)}),
}

REFUSED_OFFSETS = {
    "date offset with a keyword it does not take": ("date_offset_", 1, False, {"__class__": 1}),
    "date offset with a count of text": ("date_offset_", 1, False, {"months": "1" * 10_000}),
    "date offset over 64 bits": ("date_offset_", 1, False, {"months": 10**400}),
    "date offset's weekday past Sunday": ("date_offset_", 1, False, {"weekday": 9}),
}


@pytest.mark.parametrize("payload", REFUSED.values(), ids=REFUSED.keys())
def test_a_builder_refuses_arguments_that_do_not_make_its_data(payload: bytes) -> None:
    with pytest.raises(UnsafeValueError) as refused:
        unpickle_data(payload)
    assert "not one of the kernel's builders" not in str(refused.value)  # refused by the builder, not on the way


@pytest.mark.parametrize("arguments", REFUSED_OFFSETS.values(), ids=REFUSED_OFFSETS.keys())
def test_a_calendar_offset_is_made_of_the_keywords_pandas_takes_only(arguments: tuple[object, ...]) -> None:
    with pytest.raises(UnsafeValueError):
        unpickle_data(builder(*arguments))  # type: ignore[arg-type]


def test_a_value_nested_deeper_than_data_nests_is_refused() -> None:
    # A tuple nested a million deep costs a byte a level; hashing it (as a dict's key) recursed in C until the
    # kernel crashed. (Not hashed here: on a kernel without the bound, this test's process would crash.)
    deep = pickle.PROTO + b"\x05" + pickle.EMPTY_TUPLE + pickle.TUPLE1 * 1_000_000 + pickle.STOP
    with pytest.raises(UnsafeValueError, match="nests values over 1000 deep"):
        unpickle_data(deep)
    assert unpickle_data(pickle.dumps(((((1,),),),), protocol=5)) == ((((1,),),),)


def test_a_range_stays_lazy_and_no_builder_makes_a_list_of_it() -> None:
    made = unpickle_data(builder("range_", 0, 10**18, 1))
    assert made == range(10**18)  # a range, not a list of 10**18 numbers


# --- in the child: what is not data is refused by name -----------------------------------------------------------


def test_a_value_that_is_not_data_is_refused_in_the_child_by_its_class() -> None:
    httpx = pytest.importorskip("httpx")
    with pytest.raises(pickle.PicklingError, match="httpx.Client is not data the kernel rebuilds"):
        dumps_value({"client": httpx.Client()})


# --- what an analysis makes comes back -------------------------------------------------------------------------


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    HIGH = 3


class Point(typing.NamedTuple):
    x: int
    y: int


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    score: float


class Reading(pydantic.BaseModel):
    sensor: str
    value: float


class Outer:
    class Inner:
        def __init__(self, value: int) -> None:
            self.value = value

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Outer.Inner) and other.value == self.value


class Labels(list):  # type: ignore[type-arg]
    """A subclass of a plain kind: it comes back as the plain kind."""


PLAIN = {
    "containers": ([1, (2, 3)], {"a": {1, 2}}, frozenset({4}), bytearray(b"ab"), b"cd", range(1, 9, 2), slice(1, 5), 3 + 4j, ..., 10**40),
    "collections": (collections.OrderedDict(a=1), collections.defaultdict(list, a=[1]), collections.deque([1, 2], maxlen=5),
                    collections.Counter("aab"), types.SimpleNamespace(a=1)),
    "time": (datetime.datetime(2026, 11, 30, 1, 2, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")), datetime.date(2026, 1, 1),
             datetime.timedelta(days=3), datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=-5), "EST")),
             datetime.time(1, 2, 3)),
    "numbers": (decimal.Decimal("1.50"), fractions.Fraction(3, 7)),
    "other": (uuid.UUID(int=7), pathlib.PurePosixPath("/data/x.csv"), pathlib.Path("/tmp")),
    "declared": (Color.RED, Level.HIGH, Point(1, 2), Row("a", 0.5), Reading(sensor="t", value=1.5), Outer.Inner(3)),
}


@pytest.mark.parametrize("name", list(PLAIN))
def test_plain_and_declared_data_come_back_equal(name: str) -> None:
    value = PLAIN[name]
    back = unpickle_data(dumps_value(value))
    assert back == value
    assert [type(item) for item in back] == [type(item) for item in value]


def test_a_subclass_of_a_plain_kind_comes_back_as_the_plain_kind() -> None:
    back = unpickle_data(dumps_value(Labels(["a", "b"])))
    assert back == ["a", "b"] and type(back) is list


def test_numpy_values_come_back_equal() -> None:
    values = [
        np.arange(12.0).reshape(3, 4), np.asfortranarray(np.ones((2, 3), dtype=np.float32)), np.array([1, "a", None], dtype=object),
        np.zeros(2, dtype=[("a", "i4"), ("b", "f8")]), np.array(["2026-01-01"], dtype="M8[D]"), np.array(["ab", "c"]),
    ]
    for sent, got in zip(values, unpickle_data(dumps_value(values)), strict=True):
        assert got.dtype == sent.dtype and got.shape == sent.shape and got.tolist() == sent.tolist() and got.flags.writeable
    scalars = [np.float64(1.5), np.int64(3), np.bool_(True), np.datetime64("2026-01-01"), np.zeros(1, dtype=[("a", "i4")])[0]]
    assert [repr(value) for value in unpickle_data(dumps_value(scalars))] == [repr(value) for value in scalars]
    masked = np.ma.masked_array([1, 2], mask=[0, 1])
    assert unpickle_data(dumps_value(masked)).mask.tolist() == [False, True]


def test_pandas_values_come_back_equal() -> None:
    frame = pd.DataFrame({
        "int": [1, 2], "text": ["x", "y"], "category": pd.Categorical(["u", "v"]), "float": [1.5, None],
        "when": pd.to_datetime(["2026-01-01", "2026-01-02"]).tz_localize("Europe/Paris"), "naive": pd.to_datetime(["2026-01-01", "2026-01-02"]),
        "nullable": pd.array([1, None], dtype="Int64"), "string": pd.array(["s", None], dtype="string"),
        "flag": pd.array([True, None], dtype="boolean"), "span": pd.to_timedelta([1, 2], unit="D"), "objects": [{"a": 1}, None],
    }, index=pd.MultiIndex.from_tuples([(1, "a"), (2, "b")], names=["n", "l"]))
    back = unpickle_data(dumps_value(frame))
    assert back.equals(frame) and list(back.dtypes) == list(frame.dtypes) and back.index.names == frame.index.names
    others = [
        pd.Series([1.0, 2.0], index=pd.date_range("2026", periods=2, freq="D"), name="s"), pd.period_range("2026-01", periods=2, freq="M"),
        pd.interval_range(0, 2), pd.timedelta_range("1D", periods=2), pd.CategoricalIndex(["a", "b"]), pd.RangeIndex(5),
        pd.Index([("a", 1), ("b", 2)], tupleize_cols=False), pd.DataFrame(),
    ]
    for value, got in zip(others, unpickle_data(dumps_value(others)), strict=True):
        assert type(got) is type(value) and got.equals(value)
    times = [pd.Timestamp("2026-01-01", tz="Europe/Paris"), pd.Timestamp("2026-01-01 00:00:00.000000001"), pd.Timedelta("1D"),
             pd.Period("2026-01"), pd.Interval(0, 1), pd.offsets.MonthEnd(2), pd.offsets.BusinessDay(2), pd.NaT]
    assert [repr(value) for value in unpickle_data(dumps_value(times))] == [repr(value) for value in times]
    assert unpickle_data(dumps_value(pd.NA)) is pd.NA


def test_a_time_index_keeps_its_frequency() -> None:
    values = [
        pd.date_range("2026-01-01", periods=5, freq="D"), pd.date_range("2026-03-29", periods=4, freq="h", tz="Europe/Paris"),
        pd.timedelta_range("1D", periods=3, freq="6h"), pd.Series(range(3), index=pd.date_range("2026", periods=3, freq="MS")),
        pd.DataFrame({"x": range(3)}, index=pd.date_range("2026", periods=3, freq="W-SUN")),
    ]
    back = unpickle_data(dumps_value(values))
    assert [str(getattr(got, "index", got).freq) for got in back] == [str(getattr(sent, "index", sent).freq) for sent in values]
    assert all(got.equals(sent) for got, sent in zip(back, values, strict=True))


@pytest.mark.parametrize(
    "frequency",
    [pd.offsets.CustomBusinessDay(holidays=["2026-01-02"]), pd.DateOffset(months=1), pd.offsets.Easter()],
    ids=["holidays its name drops", "a DateOffset of its own", "no name to parse"],
)
def test_a_frequency_its_name_does_not_make_again_crosses_as_times_without_it(frequency: object) -> None:
    index = pd.date_range("2026-01-01", periods=3, freq=frequency)
    back = unpickle_data(dumps_value(index))
    assert back.equals(index) and back.freq is None


def test_a_long_index_of_a_frequency_slow_to_check_crosses_without_it() -> None:
    index = pd.date_range("2026-01-01", periods=20_000, freq="WOM-1MON")
    back = unpickle_data(dumps_value(index))
    assert back.equals(index) and back.freq is None
    daily = pd.date_range("2026-01-01", periods=200_000, freq="D", unit="s")
    assert unpickle_data(dumps_value(daily)).freq == daily.freq


def test_a_frames_and_a_series_attrs_come_back() -> None:
    frame = pd.DataFrame({"x": [1, 2]})
    frame.attrs = {"source": "survey", "version": 2}
    series = frame["x"].copy()
    series.attrs = {"unit": "kg"}
    back_frame, back_series = unpickle_data(dumps_value([frame, series]))
    assert (back_frame.attrs, back_series.attrs) == ({"source": "survey", "version": 2}, {"unit": "kg"})


def test_attrs_that_are_not_metadata_are_left_behind() -> None:
    # pandas copies `attrs` deeply at almost every operation: an array there would cost each one in the kernel.
    frame = pd.DataFrame({"x": [1, 2]})
    frame.attrs = {"weights": np.ones(3)}
    assert unpickle_data(dumps_value(frame)).attrs == {}


def test_empty_numpy_text_a_folded_time_and_a_calendar_offset_come_back() -> None:
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    values = [
        np.str_(""), np.bytes_(b""), datetime.datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=paris), datetime.time(1, 30, fold=1),
        pd.DateOffset(months=1), pd.DateOffset(days=2, hours=3, normalize=True), pd.DateOffset(3, weekday=4),
    ]
    back = unpickle_data(dumps_value(values))
    assert [repr(got) for got in back] == [repr(sent) for sent in values]
    assert back[2].utcoffset() == values[2].utcoffset()  # the second 02:30 of that night, in winter time


def test_a_masked_arrays_fill_value_comes_back() -> None:
    masked = np.ma.masked_array([1.0, 2.0], mask=[0, 1], fill_value=-1.0)
    assert unpickle_data(dumps_value(masked)).fill_value == -1.0


def test_a_masked_arrays_default_fill_value_stays_the_default() -> None:
    text = np.ma.masked_array(["a", "b"], mask=[0, 1])  # the default, "N/A", is more than its dtype holds
    back = unpickle_data(dumps_value(text))
    assert back.fill_value == text.fill_value and back.filled().tolist() == text.filled().tolist()


class Result(typing.NamedTuple):
    statistic: float
    pvalue: float


class Aliased(pydantic.BaseModel):
    name: str = pydantic.Field(alias="Name")


def test_what_a_user_returns_keeps_its_dtype_zone_and_unit() -> None:
    import dateutil.tz

    frame = pd.DataFrame({
        "labels": pd.Series(["a", "b"], dtype=object),  # pandas would read text back as `str`
        "text": pd.Series(pd.array(["a", None], dtype="string[python]")),  # NA, not NaN
        "paris": pd.to_datetime(["2026-01-01", "2026-01-02"]).tz_localize(dateutil.tz.gettz("Europe/Paris")),
    }, index=[7, 7])  # a repeated label: the columns are labelled, not aligned
    back = unpickle_data(dumps_value(frame))
    assert [str(dtype) for dtype in back.dtypes][:2] == ["object", "string"]
    assert (back["paris"].dt.unit, str(back["paris"].dt.tz)) == (frame["paris"].dt.unit, "Europe/Paris")
    assert back["paris"].tolist() == frame["paris"].tolist()
    assert back["text"][7].iloc[1] is pd.NA and back.index.tolist() == [7, 7]
    early = pd.Timestamp("1500-01-01")  # microseconds: out of nanoseconds' range
    assert unpickle_data(dumps_value(early)) == early and unpickle_data(dumps_value(early)).unit == early.unit
    utc = pd.Timestamp("2026-01-01 10:00", tz=dateutil.tz.tzutc())
    assert unpickle_data(dumps_value(utc)) == utc


def test_a_value_with_more_than_its_form_carries_comes_back_as_its_plain_part() -> None:
    with_state = type("Stateful", (Result,), {})(1.5, 0.2)  # a subclass with a `__dict__`, as scipy's results have
    with_state.df = 3
    assert unpickle_data(dumps_value(with_state)) == (1.5, 0.2)
    counts = collections.defaultdict(lambda: 0, a=1)
    assert unpickle_data(dumps_value(counts)) == {"a": 1} and type(unpickle_data(dumps_value(counts))) is dict
    assert unpickle_data(dumps_value(Aliased(Name="x"))) == Aliased(Name="x")


def test_a_time_zone_with_no_name_is_refused_in_the_child_by_name() -> None:
    import dateutil.tz

    with pytest.raises(pickle.PicklingError, match="has no name the kernel can find it by"):
        dumps_value(datetime.datetime(2026, 1, 1, tzinfo=dateutil.tz.tzlocal()))


# --- end to end ------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")
def test_a_forged_answer_the_models_code_sends_is_refused_and_runs_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    import nighthawk as nh
    from isolated_steps import look
    from scripting import finish, scripted_executor

    # The model's code finds the channel in the frames that run it and answers for the child, then ends it.
    forged = "pickle.dumps(type('F', (), {'__reduce__': lambda self: (list, (map(print, ['ran in the kernel']),))})(), 5)"
    channel = "next(info.frame.f_locals['channel'] for info in inspect.stack() if 'channel' in info.frame.f_locals)"
    send = (f"((pickle := __import__('pickle')), (inspect := __import__('inspect')), (c := {channel}), "
            f"(m := pickle.dumps(('returned', {forged}, {{}}, False), 5)), c.sendall(__import__('struct').pack('!Q', len(m)) + m), "
            "__import__('os')._exit(0))")
    executor, script = scripted_executor([finish("return", return_expression=send)], [finish("return", return_expression="1")])
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()), pytest.raises(nh.errors.IsolationError):
        look()  # the model is told, and its next try finds the child it ended gone
    told = str(script.seen[-1][-1])
    assert "the return value was refused on its way back from the isolated child" in told and "names builtins.list, which is not one of the kernel" in told
    assert "ran in the kernel" not in capfd.readouterr().out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")
def test_an_installed_packages_object_is_refused_in_the_child_by_name() -> None:
    from isolated_steps import run_isolated

    read = run_isolated("nh_assign", "__import__('httpx').Client()")
    assert "cannot be sent from the isolated child" in read and "httpx.Client is not data the kernel rebuilds" in read


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")
def test_a_binding_the_kernel_would_refuse_is_put_back_in_the_child_too() -> None:
    import nighthawk as nh
    from isolated_steps import look
    from scripting import call, finish, scripted_executor

    # Refused in the child as the kernel would refuse it: `result` stays what it was there as well.
    forbidden = "__import__('types').SimpleNamespace(__array_interface__=1)"
    executor, script = scripted_executor(
        [call("nh_assign", target_path="result", expression=forbidden)], [call("nh_eval", expression="result")],
        [finish("return", return_expression="None")],
    )
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated()):
        look()
    told = " ".join(str(part.content) for request in script.seen[1:] for part in request[-1].parts)
    assert "a field named as a protocol" in told
    assert '"value": null' in " ".join(script.last_tool_results())
