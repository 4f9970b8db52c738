"""Types inferred from an initial value never change data: instances and lossless conversions only."""

from __future__ import annotations

import json
from collections import OrderedDict

import numpy as np  # noqa: F401 - named by the model's expressions, which run in this module's globals
import pandas as pd

import nighthawk as nh
from scripting import call, finish, scripted_executor


def assign(target: str, expression: str) -> object:
    return call("nh_assign", target_path=target, expression=expression)


def refused(script: object) -> dict[str, str]:
    error = json.loads(script.last_tool_results()[0])["error"]  # type: ignore[attr-defined]
    assert error is not None
    return error


@nh.natural_function
def tally() -> object:
    count = 0
    """natural
    Set <:count>.
    """
    return count


def test_dataframe_is_not_committed_into_a_list_binding_as_its_column_names() -> None:
    executor, script = scripted_executor([assign("data", "pd.DataFrame(data)")], [finish()])

    @nh.natural_function
    def tabulate() -> object:
        data = [{"a": 1, "b": 2}]
        """natural
        Turn <:data> into a table.
        """
        return data

    with nh.run(executor):
        assert tabulate() == [{"a": 1, "b": 2}]
    error = refused(script)
    assert error["kind"] == "invalid_input"
    assert "expected list (inferred from the initial value), got DataFrame" in error["message"]


def test_two_dimensional_array_is_not_committed_as_a_list_of_rows() -> None:
    executor, script = scripted_executor([assign("grid", "np.zeros((2, 2))")], [finish()])

    @nh.natural_function
    def fill() -> object:
        grid = [[0]]
        """natural
        Fill <:grid>.
        """
        return grid

    with nh.run(executor):
        assert fill() == [[0]]
    assert "got ndarray" in refused(script)["message"]


def test_dict_keys_are_not_committed_as_a_list() -> None:
    executor, script = scripted_executor([assign("names", "{'a': 1}.keys()")], [finish()])

    @nh.natural_function
    def collect() -> object:
        names = ["x"]
        """natural
        Collect <:names>.
        """
        return names

    with nh.run(executor):
        assert collect() == ["x"]
    assert "got dict_keys" in refused(script)["message"]


def test_true_is_not_committed_into_an_int_binding_as_one() -> None:
    executor, script = scripted_executor([assign("count", "True")], [finish()])

    with nh.run(executor):
        result = tally()
    assert (result, type(result)) == (0, int)
    assert "expected int (inferred from the initial value), got bool" in refused(script)["message"]


def test_int_is_committed_into_a_float_binding_as_the_same_number() -> None:
    executor, _ = scripted_executor([assign("total", "3"), finish()])

    @nh.natural_function
    def add() -> object:
        total = 0.0
        """natural
        Set <:total>.
        """
        return total

    with nh.run(executor):
        result = add()
    assert (result, type(result)) == (3.0, float)


def test_numpy_integer_is_committed_into_an_int_binding_as_an_int() -> None:
    executor, _ = scripted_executor([assign("count", "np.int64(5)"), finish()])

    with nh.run(executor):
        result = tally()
    assert (result, type(result)) == (5, int)


def test_instance_of_the_inferred_type_is_committed_as_the_same_object() -> None:
    rows = [{"id": 1}]
    executor, _ = scripted_executor([assign("picked", "rows"), finish()])

    @nh.natural_function
    def pick(rows: list[dict[str, int]]) -> object:
        picked = []
        """natural
        Set <:picked> to <rows>.
        """
        return picked

    with nh.run(executor):
        assert pick(rows) is rows


def test_subclass_of_the_inferred_type_keeps_its_class() -> None:
    executor, _ = scripted_executor([assign("index", "OrderedDict(b=2, a=1)"), finish()])

    @nh.natural_function
    def build() -> object:
        index = {}
        """natural
        Build <:index>.
        """
        return index

    with nh.run(executor):
        result = build()
    assert type(result) is OrderedDict
    assert list(result) == ["b", "a"]


def test_declared_dataframe_binding_accepts_the_dataframe() -> None:
    executor, _ = scripted_executor([assign("table", "pd.DataFrame({'a': [1, 2]})"), finish()])

    @nh.natural_function
    def tabulate() -> object:
        table: pd.DataFrame = pd.DataFrame()
        """natural
        Fill <:table>.
        """
        return table

    with nh.run(executor):
        result = tabulate()
    assert isinstance(result, pd.DataFrame)
    assert list(result["a"]) == [1, 2]
