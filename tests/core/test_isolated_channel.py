"""The kernel reads the isolated child's answers with an unpickler held to data. The child runs the model's
code, so these tests write its answers as an attacker would, opcode by opcode: every road to a class that
acts when built (here `ctypes.CDLL`, which loads a shared library) is refused, and nothing is built.
"""

from __future__ import annotations

import collections
import ctypes
import datetime
import pickle
import types
from collections.abc import Iterator

import pytest

import nighthawk.oversight.isolation._tree  # noqa: F401 - loaded in the kernel by any isolated step; it imports ctypes
from nighthawk.oversight.isolation._channel import UnsafeValueError, unpickle_data


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


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """The arguments of every `ctypes.CDLL` built while the test runs."""
    calls: list[object] = []
    monkeypatch.setattr(ctypes.CDLL, "__init__", lambda self, *args, **kwargs: calls.append(args))
    yield calls


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
    monkeypatch.setitem(__import__("sys").modules, "notebook_helpers", helpers)
    cdll = global_("notebook_helpers", "CDLL")
    with pytest.raises(UnsafeValueError, match="notebook_helpers.CDLL"):
        unpickle_data(reconstruct(cdll, cdll, text("/tmp/evil.so")))
    assert built == []


class Recorder:
    """A user's class whose `__init__` acts: the child must not get to call it with arguments it chose."""

    made: list[object] = []

    def __init__(self, state: object) -> None:
        Recorder.made.append(state)


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


class Outer:
    class Inner:
        def __init__(self, value: int) -> None:
            self.value = value

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Outer.Inner) and other.value == self.value


def test_data_and_the_users_nested_classes_still_come_back() -> None:
    value = {"when": datetime.date(2026, 11, 29), "counts": collections.Counter("aab"), "inner": Outer.Inner(3)}
    for protocol in (4, 5):  # the child sends the highest
        assert unpickle_data(pickle.dumps(value, protocol=protocol)) == value


def test_an_answer_longer_than_the_childs_memory_limit_is_not_read() -> None:
    # The model's code finds the channel in the frames that run it and announces a gigabyte: a kernel that read
    # on would hold whatever the child streams, for as long as it streams.
    from isolated_steps import run_isolated

    channel = "next(info.frame.f_locals['channel'] for info in __import__('inspect').stack() if 'channel' in info.frame.f_locals)"
    flood = f"((c := {channel}).sendall(__import__('struct').pack('!Q', 2**30)), c.sendall(bytes(50_000_000)), __import__('os')._exit(0))"
    read = run_isolated("nh_eval", flood, memory_mb=64)
    assert "announced an answer of 1,073,741,824 bytes" in read
    assert "more than its memory limit (64 MiB)" in read
