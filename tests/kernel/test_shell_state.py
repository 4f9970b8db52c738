"""A guarded step's code cannot leave code in the shell's own hooks, where it would run on the next cells as
the user's: the transformer lists and the event callbacks are put back as they were when the step ends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kernel_scripts import outcome, scripted
from pydantic_ai.messages import ToolCallPart

CHANGES = {
    "input_transformers_post": "get_ipython().input_transformers_post.append(lambda lines: lines)",
    "input_transformers_cleanup": "get_ipython().input_transformers_cleanup.insert(0, lambda lines: lines)",
    "ast_transformers": "get_ipython().ast_transformers.append(__import__('ast').NodeTransformer())",
    "an event callback": "get_ipython().events.register('pre_run_cell', lambda *args: None)",
    "a replaced list": "setattr(get_ipython(), 'input_transformers_post', [lambda lines: lines])",
    "an emptied list": "get_ipython().input_transformers_cleanup.clear()",
    "a line transform": "get_ipython().input_transformer_manager.line_transforms.append(lambda lines: lines)",
    "a token transformer": "get_ipython().input_transformer_manager.token_transformers.append(type(None))",
}


def state(shell: Any) -> list[tuple[object, list[object]]]:
    held = [getattr(shell, name) for name in ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")]
    held += [shell.input_transformer_manager.line_transforms, shell.input_transformer_manager.token_transformers]
    held += list(shell.events.callbacks.values())
    return [(items, list(items)) for items in held]


@pytest.fixture
def kept(shell: Any) -> Iterator[list[tuple[object, list[object]]]]:
    before = state(shell)
    yield before
    shell.input_transformers_post = before[1][0]  # whatever the test found, the next test gets a clean shell
    for items, contents in before:
        items[:] = contents  # type: ignore[index]


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_guarded_step_leaves_the_shells_hooks_as_they_were(
    change: str, shell: Any, use_model: Any, kept: list[tuple[object, list[object]]]
) -> None:
    use_model(scripted([ToolCallPart("nh_eval", {"expression": CHANGES[change]})], [outcome("pass")]))
    shell.run_cell(
        "import nighthawk as nh\n"
        "with nh.scope(oversight=nh.oversight.Oversight(runtime=nh.oversight.read_only().runtime)):\n"
        "    get_ipython().run_cell_magic('natural', '', 'Look around.')"
    )
    after = state(shell)
    assert [items for items, _ in after] == [items for items, _ in kept]
    assert all(len(a) == len(b) and all(x is y for x, y in zip(a, b)) for (_, a), (_, b) in zip(after, kept))
