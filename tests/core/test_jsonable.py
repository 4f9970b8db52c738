"""`nh.to_jsonable_value`: any value as plain JSON data, without ever raising."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel

import nighthawk as nh


class Invoice(BaseModel):
    number: int
    tags: set[str]


@dataclass
class Point:
    x: int
    y: int


def test_models_dataclasses_and_containers_become_plain_json() -> None:
    value = {"invoice": Invoice(number=7, tags={"paid"}), "where": Point(1, 2), "pair": (1, "a")}
    converted = nh.to_jsonable_value(value)
    assert converted == {"invoice": {"number": 7, "tags": ["paid"]}, "pair": [1, "a"], "where": {"x": 1, "y": 2}}
    json.dumps(converted)  # and it is really JSON


def test_keys_become_strings_in_a_stable_order() -> None:
    assert list(nh.to_jsonable_value({2: "b", 1: "a", "c": 3})) == ["1", "2", "c"]  # type: ignore[arg-type]


def test_a_cycle_and_a_value_without_json_form_are_marked_not_raised() -> None:
    loop: list[object] = []
    loop.append(loop)
    assert nh.to_jsonable_value(loop) == ["<cycle>"]
    assert nh.to_jsonable_value({"raw": b"\x00", "thing": object()}) == {"raw": "<nonserializable>", "thing": "<nonserializable>"}


def test_the_same_object_twice_is_not_a_cycle() -> None:
    shared = [1]
    assert nh.to_jsonable_value([shared, shared]) == [[1], [1]]
