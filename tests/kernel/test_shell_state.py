"""A guarded step's code cannot leave code in the shell's own hooks, where it would run on the next cells as
the user's: the transformer lists, the event callbacks, the display printers, the hooks and the custom
exception handler are put back as they were when the step ends."""

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
    "an ipython_display printer": "get_ipython().display_formatter.ipython_display_formatter.for_type(int, lambda v: None)",
    "a mimebundle printer": "get_ipython().display_formatter.mimebundle_formatter.for_type(int, lambda v, **kw: {})",
    "a line transform": "get_ipython().input_transformer_manager.line_transforms.append(lambda lines: lines)",
    "a token transformer": "get_ipython().input_transformer_manager.token_transformers.append(type(None))",
    "a display printer": "get_ipython().display_formatter.formatters['text/plain'].for_type(int, lambda v, p, c: p.text('!'))",
    "a display printer by name": "get_ipython().display_formatter.formatters['text/html'].for_type_by_name('decimal', "
    "'Decimal', lambda v: '!')",
    "a new display format": "get_ipython().display_formatter.formatters.setdefault('text/x-model', None)",
    "a hook": "get_ipython().set_hook('show_in_pager', lambda *args: None)",
    "a custom exception handler": "get_ipython().set_custom_exc((ValueError,), lambda *args, **kw: None)",
}


def state(shell: Any) -> list[tuple[object, list[object]]]:
    held: list[Any] = [getattr(shell, name) for name in ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")]
    manager = shell.input_transformer_manager
    held += [manager.line_transforms, manager.token_transformers]  # (its cleanup list is `input_transformers_cleanup`)
    held += list(shell.events.callbacks.values())
    formatters = shell.display_formatter.formatters
    every = [*formatters.values(), shell.display_formatter.ipython_display_formatter, shell.display_formatter.mimebundle_formatter]
    held += [formatters, *(getattr(f, name) for f in every for name in PRINTERS)]
    held += [shell.hooks, *(dispatcher.chain for dispatcher in shell.hooks.values())]
    handler = [shell.custom_exceptions, shell.CustomTB]
    return [(items, flat(items)) for items in held] + [(handler, handler)]


PRINTERS = ("type_printers", "deferred_printers", "singleton_printers")


def flat(items: Any) -> list[object]:
    """What a list or a dict holds, as a list that can be compared by identity."""
    return [part for pair in items.items() for part in pair] if isinstance(items, dict) else list(items)


def same(a: list[object], b: list[object]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


@pytest.fixture
def kept(shell: Any) -> Iterator[list[tuple[object, list[object]]]]:
    before = state(shell)
    yield before
    shell.input_transformers_post = before[1][0]  # whatever the test found, the next test gets a clean shell
    shell.custom_exceptions, shell.CustomTB = before[-1][1]
    for items, contents in before[:-1]:
        if isinstance(items, dict):
            items.clear()
            items.update(zip(contents[::2], contents[1::2]))
        else:
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
    assert same([items for items, _ in after[:-1]], [items for items, _ in kept[:-1]])  # the last: a handler's parts
    assert all(same(a, b) for (_, a), (_, b) in zip(after, kept))
