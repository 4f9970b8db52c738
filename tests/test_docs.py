"""The examples in README.md and docs/ are tried as a new user would try them, block by block.

- ```` ```python ```` blocks run; ```` ```python no-run ```` blocks (a real provider) are only compiled.
- ```` ```ipython ```` blocks are notebook cells. They run in order with the page's Python blocks, in an
  IPython shell whose magics are declared by the startup file an install puts in place (no `%load_ext`).
  ```` ```ipython no-run ```` cells are only checked: their magics exist and their magic lines parse.
- An error message quoted as a code span right after `<!-- message -->` must be one the code can still
  produce (see `support/doc_messages.py`): `…` in the quote stands for what the message fills in.
- The tools the docs and `nighthawk.testing` name are the tools a model is offered.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.doc_messages import produced_by_the_code

pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
STARTUP_FILE = ROOT / "jupyter-config" / "ipython" / "startup" / "50-nighthawk.py"

_FENCE = re.compile(r"^```(python|ipython)( no-run)?\n(.*?)^```", re.MULTILINE | re.DOTALL)
_QUOTE = re.compile(r"<!-- message -->\s*(`+) ?(.+?) ?\1(?!`)")


def _blocks(page: Path) -> list[tuple[str, bool, str]]:
    """(language, no-run, code) of each runnable fence of `page`."""
    return [(language, bool(no_run), code) for language, no_run, code in _FENCE.findall(page.read_text())]


# --- the examples ---------------------------------------------------------------------------------------


@pytest.fixture
def notebook() -> Iterator[InteractiveShell]:
    """A fresh IPython shell (the singleton `get_ipython()` returns) set up by the startup file; the shell
    that was current before is current again afterwards."""
    singletons = [cls for cls in InteractiveShell.__mro__ if "_instance" in vars(cls)]
    before = {cls: vars(cls)["_instance"] for cls in singletons}
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    try:
        exec(compile(STARTUP_FILE.read_text(), str(STARTUP_FILE), "exec"), {})
        yield shell
    finally:
        if "nighthawk" in shell.extension_manager.loaded:
            shell.run_line_magic("unload_ext", "nighthawk")
        InteractiveShell.clear_instance()
        for cls, instance in before.items():
            cls._instance = instance


def _run_cell(shell: InteractiveShell, code: str, where: str) -> None:
    result = shell.run_cell(code, store_history=True)
    error = result.error_before_exec or result.error_in_exec
    assert error is None, f"{where} failed: {type(error).__name__}: {error}\n{code}"


def _check_cell(shell: InteractiveShell, code: str, where: str) -> None:
    """A cell that needs a real provider: each magic it uses exists, and its options parse."""
    first, *rest = code.splitlines()
    lines = [first] if first.startswith("%%") else [line for line in [first, *rest] if line.startswith("%")]
    for line in lines:
        kind = "cell" if line.startswith("%%") else "line"
        name, _, arguments = line.lstrip("%").partition(" ")
        magic = shell.find_magic(name, kind)
        assert magic is not None, f"{where}: no {kind} magic {name!r}"
        parser = getattr(magic, "parser", None)
        if parser is not None:
            parser.parse_argstring(arguments)


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.name)
def test_documentation_examples_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notebook: InteractiveShell
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = notebook.user_ns
    namespace["__name__"] = f"docs_{page.stem.replace('-', '_')}"
    for index, (language, no_run, code) in enumerate(_blocks(page)):
        where = f"{page.name} block {index + 1}"
        if language == "ipython":
            (_check_cell if no_run else _run_cell)(notebook, code, where)
            continue
        # Examples are written to files so natural functions in them have inspectable source.
        source = tmp_path / f"{page.stem}_{index}.py"
        source.write_text(code)
        compiled = compile(code, str(source), "exec")
        if not no_run:
            exec(compiled, namespace)


# --- quoted messages ------------------------------------------------------------------------------------


def _quotes(page: Path) -> list[str]:
    return [quote for _, quote in _QUOTE.findall(page.read_text())]


@pytest.mark.parametrize("page", [p for p in PAGES if _quotes(p)], ids=lambda p: p.name)
def test_quoted_messages_are_ones_the_code_produces(page: Path) -> None:
    assert [quote for quote in _quotes(page) if not produced_by_the_code(quote)] == []


@pytest.mark.parametrize(
    "quote",
    [
        "write binding(s) […] appear only after interpolation",  # troubleshooting.md until the message changed
        "the model provider answered HTTP 429: …",  # providers.md, before the provider and model were named
        "no step executor is set in thread …: nighthawk.run(...) is open in another thread",  # backticks lost
    ],
)
def test_a_quote_of_a_message_the_code_no_longer_has_is_refused(quote: str) -> None:
    assert not produced_by_the_code(quote)


@pytest.mark.parametrize(
    "quote",
    [
        "binding(s) ['total'] are built by interpolation",
        "the model provider … answered HTTP 429 for model 'gpt-4o': …",
        "NighthawkError: no step executor is set",
    ],
)
def test_a_quote_of_a_message_the_code_has_is_accepted(quote: str) -> None:
    assert produced_by_the_code(quote)


# --- tool names -----------------------------------------------------------------------------------------

_TOOL_NAME = re.compile(r"\bnh_[a-z_<>]+")


def _tools_the_model_gets() -> set[str]:
    """The names of the tools a model is offered when it runs a step."""
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    import nighthawk as nh
    from nighthawk.testing import agent_executor

    offered: set[str] = set()

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        offered.update(tool.name for tool in [*info.function_tools, *info.output_tools])
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])

    @nh.natural_function
    def do_nothing() -> None:
        """natural
        Do nothing.
        """

    with nh.run(agent_executor(FunctionModel(respond))):
        do_nothing()
    return offered


def test_tools_named_in_the_docs_and_in_nighthawk_testing_are_the_ones_the_model_gets() -> None:
    import nighthawk.testing

    texts = {page.name: page.read_text() for page in PAGES}
    texts["nighthawk.testing"] = Path(nighthawk.testing.__file__).read_text()
    offered = _tools_the_model_gets()
    named = {(where, name) for where, text in texts.items() for name in _TOOL_NAME.findall(text)}
    assert sorted((where, name) for where, name in named if name not in offered) == []
