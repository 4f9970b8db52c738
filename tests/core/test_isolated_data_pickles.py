"""The kernel reads the isolated child's answers with an unpickler held to data. The child runs the model's
code, so these tests write its answers as an attacker would, opcode by opcode: every road to a call, a class
that acts, a change of the kernel's own classes, a crash or an allocation of the child's choosing is refused,
and nothing is built; the values an analysis makes still come back equal.
"""

from __future__ import annotations

import collections
import ctypes
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
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pydantic
import pytest

import nighthawk.oversight.isolation._tree  # noqa: F401 - loaded in the kernel by any isolated step; it imports ctypes
from nighthawk.oversight.isolation._data_pickles import UnsafeValueError, unpickle_data


def global_(module: str, name: str) -> bytes:
    """The opcodes that push `module`'s attribute `name` (protocol 4's STACK_GLOBAL: `name` may be dotted)."""
    return b"".join(
        pickle.SHORT_BINUNICODE + bytes([len(text)]) + text.encode() for text in (module, name)
    ) + pickle.STACK_GLOBAL


def text(value: str) -> bytes:
    return pickle.SHORT_BINUNICODE + bytes([len(value)]) + value.encode()


def reconstruct(cls: bytes, base: bytes, state: bytes) -> bytes:
    """A pickle that calls `copyreg._reconstructor(cls, base, state)`."""
    return pickle.PROTO + b"\x05" + global_("copyreg", "_reconstructor") + cls + base + state + pickle.TUPLE3 + pickle.REDUCE + pickle.STOP


class Forged:
    """Pickles as the call (and state) it is given: what the child's code can send without writing opcodes."""

    def __init__(self, *reduced: object) -> None:
        self.reduced = reduced

    def __reduce__(self) -> tuple[object, ...]:
        return self.reduced


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """The arguments of every `ctypes.CDLL` built while the test runs."""
    calls: list[object] = []
    monkeypatch.setattr(ctypes.CDLL, "__init__", lambda self, *args, **kwargs: calls.append(args))
    yield calls


class Recorder:
    """A user's class whose `__init__` acts: the child must not get to call it with arguments it chose."""

    made: typing.ClassVar[list[object]] = []

    def __init__(self, state: object) -> None:
        Recorder.made.append(state)


# --- classes and calls ----------------------------------------------------------------------------------------


def test_a_dotted_name_cannot_reach_a_class_through_a_data_looking_module(built: list[object]) -> None:
    cdll = global_("nighthawk.oversight.isolation._tree", "ctypes.CDLL")
    with pytest.raises(UnsafeValueError, match="ctypes.CDLL"):
        unpickle_data(reconstruct(cdll, cdll, text("/tmp/evil.so")))
    assert built == []


def test_a_class_a_users_module_imported_is_judged_by_where_it_is_defined(
    built: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    helpers = types.ModuleType("notebook_helpers")
    helpers.CDLL = ctypes.CDLL  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "notebook_helpers", helpers)
    cdll = global_("notebook_helpers", "CDLL")
    with pytest.raises(UnsafeValueError, match="notebook_helpers.CDLL"):
        unpickle_data(reconstruct(cdll, cdll, text("/tmp/evil.so")))
    assert built == []


def test_reconstructor_calls_no_init_but_a_builtin_data_types() -> None:
    recorder = global_(__name__, "Recorder")
    with pytest.raises(UnsafeValueError, match="calls"):
        unpickle_data(reconstruct(recorder, recorder, text("chosen by the child")))
    assert Recorder.made == []


def test_newobj_builds_no_class_that_acts(built: list[object]) -> None:
    payload = (pickle.PROTO + b"\x05" + global_("copyreg", "__newobj__") + global_("nighthawk.oversight.isolation._tree", "ctypes.CDLL")
               + pickle.TUPLE1 + pickle.REDUCE + pickle.STOP)
    with pytest.raises(UnsafeValueError):
        unpickle_data(payload)
    assert built == []


def test_map_cannot_call_what_the_answer_hands_it() -> None:
    # `list(map(Recorder, ["x"]))`: `map` is a class of builtins, and calls what it is given as it is iterated.
    payload = pickle.dumps(Forged(list, (Forged(map, (Recorder, ["chosen by the child"])),)), protocol=5)
    with pytest.raises(UnsafeValueError, match="map"):
        unpickle_data(payload)
    assert Recorder.made == []


class Target:
    """A class of the kernel's: the state a pickle builds must never be set on it."""


def test_the_state_of_a_class_cannot_be_set() -> None:
    # `BUILD` on a class object sets class attributes: the kernel's own classes (nighthawk's, the user's) would
    # then act as the child chose in every later step.
    payload = (pickle.PROTO + b"\x05" + global_(__name__, "Target") + pickle.NONE + pickle.EMPTY_DICT + text("patched")
               + text("by the child") + pickle.SETITEM + pickle.TUPLE2 + pickle.BUILD + pickle.STOP)
    with pytest.raises(UnsafeValueError, match="kernel's own code"):
        unpickle_data(payload)
    assert not hasattr(Target, "patched")


def test_a_class_of_an_installed_package_is_not_rebuilt() -> None:
    # Any installed package's class was taken for the user's own: one whose attributes open a file when looked
    # at (click's lazy file) truncated it once IPython looked for `_repr_html_`.
    payload = pickle.PROTO + b"\x05" + global_("httpx", "Client") + pickle.EMPTY_TUPLE + pickle.NEWOBJ + pickle.STOP
    with pytest.raises(UnsafeValueError, match="httpx"):
        unpickle_data(payload)


def test_a_pandas_class_that_opens_files_is_not_rebuilt() -> None:
    payload = pickle.PROTO + b"\x05" + global_("pandas", "HDFStore") + pickle.EMPTY_TUPLE + pickle.NEWOBJ + pickle.STOP
    with pytest.raises(UnsafeValueError, match="HDFStore"):
        unpickle_data(payload)


# --- crashes, hangs and allocations of the child's choosing ----------------------------------------------------


def test_a_dtype_whose_flags_deny_its_object_fields_is_refused() -> None:
    # With its flags saying "no objects", numpy reads the message's raw bytes as pointers to objects: a forged
    # pointer to `eval` ran a shell command in the kernel; any other value crashes it.
    fields = {"f": (np.dtype("O"), 0), "g": (np.dtype("O"), 8)}
    payload = pickle.dumps(Forged(np.dtype, ("V16", False, True), (3, "|", None, ("f", "g"), fields, 16, 1, 0)), protocol=5)
    with pytest.raises(UnsafeValueError, match="flags"):
        unpickle_data(payload)


def test_an_object_dtype_told_it_holds_no_objects_is_refused() -> None:
    payload = pickle.dumps(Forged(np.dtype, ("O8", False, True), (3, "|", None, None, None, -1, -1, 0)), protocol=5)
    with pytest.raises(UnsafeValueError, match="flags"):
        unpickle_data(payload)


def test_a_fraction_is_not_parsed_from_text() -> None:
    # `Fraction("1e1000000000")` computes a power of ten with a billion digits: hours, uninterruptible.
    with pytest.raises(UnsafeValueError, match="Fraction"):
        unpickle_data(pickle.dumps(Forged(fractions.Fraction, ("1e100",)), protocol=5))


@pytest.mark.parametrize(
    "forged",
    [
        Forged(bytearray, (10**6,)),
        Forged(bytes, (10**6,)),
        Forged(np.ndarray, ((10**6,), "O")),
        Forged(pd.Series, (None, range(10**5))),
        Forged(pd.DataFrame, (None, range(10**5), range(10))),
    ],
    ids=["bytearray", "bytes", "ndarray", "series", "frame"],
)
def test_no_size_of_the_childs_choosing_is_allocated(forged: Forged) -> None:
    # A few bytes that ask for gigabytes (a size, a shape, a range of rows) would fill the kernel's memory.
    with pytest.raises(UnsafeValueError):
        unpickle_data(pickle.dumps(forged, protocol=5))


def test_numpys_reconstructor_makes_no_array_of_a_shape_it_is_given() -> None:
    from numpy._core.multiarray import _reconstruct  # type: ignore[attr-defined]

    with pytest.raises(UnsafeValueError, match="_reconstruct"):
        unpickle_data(pickle.dumps(Forged(_reconstruct, (np.ndarray, (10**6,), "O")), protocol=5))


# --- what an analysis makes comes back -------------------------------------------------------------------------


class Color(enum.Enum):
    RED = 1


class Point(typing.NamedTuple):
    x: int
    y: int


@dataclasses.dataclass
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


PLAIN = {
    "containers": ([1, (2, 3)], {"a": {1, 2}}, frozenset({4}), bytearray(b"ab"), b"cd", range(1, 9, 2), slice(1, 5), 3 + 4j, ...),
    "collections": (collections.OrderedDict(a=1), collections.defaultdict(list, a=[1]), collections.deque([1, 2], maxlen=5),
                    collections.Counter("aab")),
    "time": (datetime.datetime(2026, 11, 30, 1, 2, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")), datetime.date(2026, 1, 1),
             datetime.timedelta(days=3), datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)),
    "numbers": (decimal.Decimal("1.50"), fractions.Fraction(3, 7), 10**40),
    "other": (uuid.UUID(int=7), pathlib.PurePosixPath("/data/x.csv"), types.SimpleNamespace(a=1)),
    "declared": (Color.RED, Point(1, 2), Row("a", 0.5), Reading(sensor="t", value=1.5), Outer.Inner(3)),
}


@pytest.mark.parametrize("name", list(PLAIN))
def test_plain_and_declared_data_come_back_equal(name: str) -> None:
    value = PLAIN[name]
    assert unpickle_data(pickle.dumps(value, protocol=5)) == value


def test_numpy_values_come_back_equal() -> None:
    values = [
        np.arange(12.0).reshape(3, 4), np.asfortranarray(np.ones((2, 3), dtype=np.float32)), np.array([1, "a", None], dtype=object),
        np.zeros(2, dtype=[("a", "i4"), ("b", "f8")]), np.array(["2026-01-01"], dtype="M8[D]"), np.array(["ab", "c"]),
    ]
    back = unpickle_data(pickle.dumps(values, protocol=5))
    for sent, got in zip(values, back, strict=True):
        assert got.dtype == sent.dtype and got.tolist() == sent.tolist()
    scalars = [np.float64(1.5), np.int64(3), np.bool_(True), np.datetime64("2026-01-01"), np.zeros(1, dtype=[("a", "i4")])[0]]
    assert [repr(value) for value in unpickle_data(pickle.dumps(scalars, protocol=5))] == [repr(value) for value in scalars]
    masked = np.ma.masked_array([1, 2], mask=[0, 1])
    assert unpickle_data(pickle.dumps(masked, protocol=5)).mask.tolist() == [False, True]


def test_pandas_values_come_back_equal() -> None:
    frame = pd.DataFrame({
        "int": [1, 2], "text": ["x", "y"], "category": pd.Categorical(["u", "v"]), "float": [1.5, None],
        "when": pd.to_datetime(["2026-01-01", "2026-01-02"]).tz_localize("Europe/Paris"), "nullable": pd.array([1, None], dtype="Int64"),
        "string": pd.array(["s", None], dtype="string"), "flag": pd.array([True, None], dtype="boolean"),
        "span": pd.to_timedelta([1, 2], unit="D"),
    }, index=pd.MultiIndex.from_tuples([(1, "a"), (2, "b")]))
    assert unpickle_data(pickle.dumps(frame, protocol=5)).equals(frame)
    others = [
        pd.Series([1.0, 2.0], index=pd.date_range("2026", periods=2, freq="D"), name="s"), pd.period_range("2026-01", periods=2, freq="M"),
        pd.interval_range(0, 2), pd.timedelta_range("1D", periods=2), pd.CategoricalIndex(["a", "b"]), pd.RangeIndex(5),
        pd.arrays.SparseArray([0, 0, 1]),
    ]
    for value, back in zip(others, unpickle_data(pickle.dumps(others, protocol=5)), strict=True):
        assert back.equals(value) if hasattr(back, "equals") else list(back) == list(value)
    times = [pd.Timestamp("2026-01-01", tz="Europe/Paris"), pd.Timedelta("1D"), pd.Period("2026-01"), pd.Interval(0, 1),
             pd.offsets.MonthEnd(2), pd.offsets.BusinessDay(2), pd.NaT]
    assert [repr(value) for value in unpickle_data(pickle.dumps(times, protocol=5))] == [repr(value) for value in times]
    assert unpickle_data(pickle.dumps(pd.NA, protocol=5)) is pd.NA


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
    assert "the return value was refused on its way back from the isolated child" in told and "names builtins.map" in told
    assert "ran in the kernel" not in capfd.readouterr().out
