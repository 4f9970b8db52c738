"""A credential held in a standard container other than a dict or a list, or in an object's attributes, is a
secret of the step like one in a dict: the model reads it nowhere, however its code takes the value apart
(`repr`, `str`, `vars`, `getattr`)."""

from __future__ import annotations

import json
from collections import ChainMap, UserDict, namedtuple
from types import MappingProxyType, SimpleNamespace

import pytest

import nighthawk as nh
from scripting import Script, call, finish, scripted_executor

# A neutral name on purpose (a global named like a credential would be a secret of every step here).
CHOSEN_TEXT = "Xq7-pR2v-Lm9k"

Creds = namedtuple("Creds", "user password")


class Settings:
    def __init__(self, password: str) -> None:
        self.user = "app"
        self.password = password


HOLDERS = {
    "named tuple": lambda: Creds("app", CHOSEN_TEXT),
    "UserDict": lambda: UserDict({"user": "app", "password": CHOSEN_TEXT}),
    "ChainMap": lambda: ChainMap({"user": "app"}, {"password": CHOSEN_TEXT}),
    "MappingProxyType": lambda: MappingProxyType({"user": "app", "password": CHOSEN_TEXT}),
    "SimpleNamespace": lambda: SimpleNamespace(user="app", password=CHOSEN_TEXT),
    "an object's attributes": lambda: Settings(CHOSEN_TEXT),
}

TAKEN_APART = {
    "repr": "repr(data)",
    "str": "str(data)",
    "the values one by one": "' / '.join(map(str, data.values() if hasattr(data, 'values') else "
    "vars(data).values() if hasattr(data, '__dict__') else data))",
}


@nh.natural_function
def inspect(data: object) -> None:
    """natural
    Look at <data>.
    """


def seen_by_model(holder: object, expression: str) -> Script:
    executor, script = scripted_executor([call("nh_eval", expression=expression)], [finish()])
    with nh.run(executor):
        inspect(holder)
    return script


@pytest.mark.parametrize("how", sorted(TAKEN_APART))
@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_a_credential_in_the_container_is_masked_however_it_is_read(holder: str, how: str) -> None:
    script = seen_by_model(HOLDERS[holder](), TAKEN_APART[how])
    (result,) = script.last_tool_results()
    assert CHOSEN_TEXT not in result
    assert CHOSEN_TEXT not in json.dumps([str(message) for request in script.seen for message in request])


@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_the_innocent_field_beside_it_is_shown(holder: str) -> None:
    script = seen_by_model(HOLDERS[holder](), TAKEN_APART["the values one by one"])
    (result,) = script.last_tool_results()
    assert "app" in result and "<masked>" in result
