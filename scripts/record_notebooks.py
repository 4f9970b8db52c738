"""Write the replay stores of the example notebooks, then store the notebooks' outputs.

The notebooks under `notebooks/` answer every step from a replay store, `notebooks/replays/<name>.replay.yaml`,
so they run with no key and no network. This script (re)makes those stores in one of two ways:

* `python scripts/record_notebooks.py` (the default) **authors** them: a scripted pydantic-ai `FunctionModel`
  plays the model, answering each Natural program with the rounds written in `ANSWERS` below. Every entry is
  stored with `authored: true`.
* `OPENAI_API_KEY=sk-... python scripts/record_notebooks.py --real` **records** them from the real model that
  each setup cell's `%nighthawk replay PATH` wraps (Nighthawk's default, `openai-responses:gpt-5.4-nano`,
  unless the cell sets another first); entries then say which model answered and `authored: false`.
  `--model openai-chat:NAME` records from another model instead, and `--base-url URL` from any
  OpenAI-compatible server (a local one needs no real key); the requests go through the provider's real
  HTTP client either way.

Either way, each store is deleted first (so it holds no stale entry), the notebook is executed once to fill it,
the store is compacted (sorted, so recording again writes the same bytes), and the notebook is then executed
again, in place and from the store alone, so its saved outputs are the ones `pytest --nbval` and
`scripts/notebooks.sh` reproduce. Widget state is not saved: GitHub and nbconvert
then show the steps' static HTML.

Pass notebook names (`01-quickstart` or `notebooks/01-quickstart.ipynb`) to redo only those. Not run in CI.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
STORES = NOTEBOOKS / "replays"

# The setup cell of every notebook plugs in its store with this line; authoring records through it instead.
_SETUP_LINE = re.compile(r"^%nighthawk replay (?P<store>\S+)[ \t]*$", re.MULTILINE)

# --- scripted answers --------------------------------------------------------------------------------

# One item of a round: a tool call `(tool_name, arguments)`; an outcome is a call of `nh_outcome` whose
# arguments hold the outcome object under `outcome`, as its schema asks.
Call = tuple[str, dict[str, Any]]
# A round is the tool calls of one model response, or a function of the step's prompt that returns them
# (for a natural function whose answer depends on its arguments).
Round = list[Call] | Callable[["Request"], list[Call]]


def _outcome(outcome: dict[str, Any]) -> Call:
    return ("nh_outcome", {"outcome": outcome})


def eval_(expression: str) -> Call:
    return ("nh_eval", {"expression": expression})


def assign(target: str, expression: str) -> Call:
    return ("nh_assign", {"target_path": target, "expression": expression})


def pass_() -> Call:
    return _outcome({"kind": "pass"})


def return_(expression: str) -> Call:
    return _outcome({"kind": "return", "return_expression": expression})


def raise_(message: str, error_type: str | None = None) -> Call:
    # Every key of the branch, `null` for no type: what a model held to the schema sends.
    return _outcome({"kind": "raise", "raise_message": message, "raise_error_type": error_type})


def break_() -> Call:
    return _outcome({"kind": "break"})


def continue_() -> Call:
    return _outcome({"kind": "continue"})


@dataclass(frozen=True)
class Request:
    """What a scripted round may look at: the step's program, its locals summary, the last tool results and
    the images sent with the prompt."""

    program: str
    locals_text: str
    tool_results: tuple[str, ...]
    media: tuple[bytes, ...] = ()

    def local(self, name: str) -> str:
        """The summary line of local `name` (`name: type = preview`), or an empty string."""
        for line in self.locals_text.splitlines():
            if line.startswith(f"{name}:"):
                return line
        return ""


@dataclass(frozen=True)
class Answer:
    """The scripted rounds for every step whose program contains `program`."""

    program: str
    rounds: Sequence[Round]


def _reserve(request: Request) -> list[Call]:
    # Round 2 of a reservation: the model has checked the stock with `nh_eval` and acts on what it saw.
    if "kettle" in request.local("order"):
        return [raise_("Not enough kettles: 2 wanted, 0 in stock.", "OutOfStock")]
    return [eval_("stock.update({order['item']: stock[order['item']] - order['quantity']})"), pass_()]


def _label(request: Request) -> list[Call]:
    ticket = request.local("ticket").lower()
    if "idea" in ticket:
        label = "feature"
    elif any(word in ticket for word in ("crash", "never arrive", "drops", "down")):
        label = "bug"
    else:
        label = "question"
    return [assign("label", repr(label)), pass_()]


_NOT_TICKETS = ('= "asdf"', '= "???"', '= "test test"')
_BILLING = ("charged", "invoice", "refund", "billed", "card", "pay by", "discount")
_FEATURES = ("idea", "would be great", "could you add", "please add", "would help", "would you consider")
_BUGS = ("crash", "down", "never", "blank", "twice", "not render", "does nothing", "returns 500", "drops")


def _ticket_label(request: Request) -> list[Call]:
    # 07-batch: a map over a table of tickets, so the answer depends on the row.
    ticket = request.local("ticket").lower()
    if ticket.endswith(_NOT_TICKETS):
        return [raise_("This is not a support ticket: there is nothing to label.", "ValueError")]
    for label, words in (("billing", _BILLING), ("feature", _FEATURES), ("bug", _BUGS)):
        if any(word in ticket for word in words):
            return [return_(repr(label))]
    return [return_("'question'")]


def _colour(request: Request) -> list[Call]:
    # 08-images: the answer is read from the picture, as a vision model would: the shape's dominant channel.
    import io

    from PIL import Image

    (image,) = request.media
    pixels = [pixel for pixel in Image.open(io.BytesIO(image)).convert("RGB").getdata() if min(pixel) < 200]
    totals = [sum(pixel[channel] for pixel in pixels) for channel in range(3)]
    return [return_(repr(("red", "green", "blue")[totals.index(max(totals))]))]


def _ticket_urgency(request: Request) -> list[Call]:
    ticket = request.local("ticket").lower()
    if any(word in ticket for word in ("down", "crash", "drops", "returns 500")):
        return [return_("3")]
    if any(word in ticket for word in _BILLING + _BUGS):
        return [return_("2")]
    return [return_("1")]


def _triage(request: Request) -> list[Call]:
    ticket = request.local("ticket").lower()
    if "click here" in ticket:
        return [continue_()]
    if "down for everyone" in ticket:
        return [break_()]
    return [pass_()]


ANSWERS: dict[str, list[Answer]] = {
    "01-quickstart": [
        Answer(
            "mention delivery",
            [[assign("late_deliveries", "sum('deliver' in review.lower() or 'late' in review.lower() for review in reviews)"), pass_()]],
        ),
        Answer(
            "over 100",
            [[eval_("[order.update(status='review') for order in orders if order['total'] > 100]"), pass_()]],
        ),
        Answer("average", [[return_("round(sum(ratings) / len(ratings), 1)")]]),
    ],
    "02-outcomes-and-errors": [
        Answer("Reserve <order>", [[eval_("stock[order['item']], order['quantity']")], _reserve]),
        Answer("amount in euros", [[assign("amounts", "[12.5, 7.0, 20.0, 3.75]"), pass_()]]),
        # The model insists on an outcome the cell denies, until Nighthawk gives up on it.
        Answer("whole cents", [[raise_("Some amounts were guesses; I would rather not convert them.")]] * 3),
    ],
    "03-natural-functions": [
        Answer("support ticket", [_label]),
        Answer("is spam", [_triage]),
        Answer(
            "Count the items",
            [[assign("count", "'four'")], [assign("count", "2 + 1 + 1"), pass_()]],
        ),
        Answer("price in <text>", [[return_("'12,50'")], [return_("12.5")]]),
        Answer(
            "with <classify>",
            [[assign("labels", "{ticket: classify(ticket) for ticket in tickets if 'click here' not in ticket.lower()}"), pass_()]],
        ),
        Answer(
            "areas that product_areas() lists",
            [[return_("next(area for area in product_areas() if area[:-1] in ticket.lower())")]],
        ),
        Answer(
            "exchange_rate tool",
            [[("exchange_rate", {"currency": "USD"})], [assign("price_eur", "round(price_usd * 0.92, 2)"), pass_()]],
        ),
    ],
    "04-working-with-data": [
        Answer(
            "best-selling product",
            [
                [eval_("records[0]"), eval_("sorted({record['product'] for record in records})")],
                [
                    assign(
                        "best_seller",
                        "max({record['product'] for record in records}, key=lambda product: "
                        "sum(record['quantity'] for record in records if record['product'] == product))",
                    ),
                    pass_(),
                ],
            ],
        ),
        Answer(
            "each region",
            [
                [eval_("sorted(set(sales.column('region')))")],
                [
                    assign(
                        "revenue_by_region",
                        "dict(sorted(((region, sales.where(region=region).total('amount')) for region in "
                        "set(sales.column('region'))), key=lambda item: -item[1]))",
                    ),
                    pass_(),
                ],
            ],
        ),
        Answer("single largest sale", [[return_("max(rows, key=lambda row: row['amount'])['region']")]]),
    ],
    "05-observability": [
        Answer("highest temperature", [[assign("warmest_day", "max(temperatures, key=temperatures.get)"), pass_()]]),
        Answer("below 20", [[eval_("{day: value for day, value in temperatures.items() if value < 20}")], [raise_("Mon is below 20 degrees (18.5).", "ValueError")]]),
        Answer("Sort <shopping>", [[eval_("shopping.sort()"), pass_()]]),
        Answer("for making coffee", [[return_("sum('coffee' in item for item in shopping)")]]),
    ],
    "06-real-provider": [
        Answer("capital of", [[assign("country", "'Portugal'"), pass_()]]),
    ],
    "07-batch": [
        Answer("Label the support ticket", [_ticket_label]),
        Answer("how urgent", [_ticket_urgency]),
    ],
    "08-images": [
        Answer(
            "line chart",
            [[
                assign("turned", "True"),
                assign("when", "'Sales rose for six months, peaked in month 6, then fell back to where they started.'"),
                pass_(),
            ]],
        ),
        Answer("main colour", [_colour]),
    ],
}


def _text_between(text: str, start: str, end: str) -> str:
    _, found, rest = text.partition(start)
    return rest.partition(end)[0].strip("\n") if found else ""


def _request(messages: list[Any]) -> Request:
    from pydantic_ai.messages import BinaryContent, ModelRequest, ToolReturnPart, UserPromptPart

    prompt = ""
    results: list[str] = []
    media: list[bytes] = []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart) and not prompt:
                # A step that sends images has a list: its text first, then each image after its label.
                content = [part.content] if isinstance(part.content, str) else list(part.content)
                prompt = content[0]
                media = [item.data for item in content if isinstance(item, BinaryContent)]
    last = messages[-1] if messages else None
    if isinstance(last, ModelRequest):
        results = [str(part.content) for part in last.parts if isinstance(part, ToolReturnPart)]
    return Request(
        program=_text_between(prompt, "<<<NH:PROGRAM>>>", "<<<NH:END_PROGRAM>>>"),
        locals_text=_text_between(prompt, "<<<NH:LOCALS>>>", "<<<NH:END_LOCALS>>>"),
        tool_results=tuple(results),
        media=tuple(media),
    )


def author_model(notebook: str) -> Any:
    """A `FunctionModel` that answers the steps of `notebook` from `ANSWERS[notebook]`.

    The round of a request is one more than the number of model responses already in its history, so a
    program's rounds are used in order, and a natural function called many times gets the same script each
    time (a round that is a function can answer from the call's arguments).
    """
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    answers = ANSWERS[notebook]

    def answer(messages: list[Any], info: Any) -> ModelResponse:
        request = _request(messages)
        matches = [item for item in answers if item.program in request.program]
        if len(matches) != 1:
            raise AssertionError(
                f"{notebook}: {len(matches)} scripted answers match the program {request.program!r}; "
                "edit ANSWERS in scripts/record_notebooks.py"
            )
        round_ = sum(1 for message in messages if isinstance(message, ModelResponse))
        rounds = matches[0].rounds
        if round_ >= len(rounds):
            raise AssertionError(f"{notebook}: program {request.program!r} asked for round {round_ + 1}, only {len(rounds)} scripted")
        calls = rounds[round_]
        if callable(calls):
            calls = calls(request)
        return ModelResponse(parts=[ToolCallPart(name, dict(arguments)) for name, arguments in calls])

    return FunctionModel(answer, model_name="authored")


# --- executing the notebooks -------------------------------------------------------------------------


def _recording_cell(source: str, model: str) -> str:
    """The setup cell with `model` made the kernel's model just before its store wraps it."""
    match = _SETUP_LINE.search(source)
    if match is None:
        raise SystemExit("the setup cell has no `%nighthawk replay PATH` line")
    return f"{source[: match.start()]}%nighthawk model {model}\n{source[match.start() :]}"


def _authoring_cell(source: str, notebook: str) -> str:
    """The setup cell with the scripted model recording into the store.

    The scripted model becomes the kernel's model just before `%nighthawk replay PATH --record` wraps it. The
    helper deletes itself, so the notebook namespace, and with it every step's request, is the same as when
    the original cell later replays the store.
    """
    match = _SETUP_LINE.search(source)
    if match is None:
        raise SystemExit(f"{notebook}: the setup cell has no `%nighthawk replay PATH` line")
    script = Path(__file__).resolve()
    authoring = (
        "def _author():\n"
        "    import importlib.util, sys\n"
        "    import nighthawk_ipython\n"
        f"    spec = importlib.util.spec_from_file_location('record_notebooks', {str(script)!r})\n"
        "    module = sys.modules['record_notebooks'] = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(module)\n"
        f"    nighthawk_ipython.configure(model=module.author_model({notebook!r}))\n"
        "_author()\n"
        "del _author\n"
        f"%nighthawk replay {match['store']} --record"
    )
    return source[: match.start()] + authoring + source[match.end() :]


def _environment(mode: str, *, real: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("NIGHTHAWK_TOKENIZER", None)  # prompts never depend on it; run as a reader's machine would
    env["NIGHTHAWK_REPLAY_MODE"] = mode
    if not real:
        # Authoring and replaying never reach a provider, even where a key is set.
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
            env.pop(name, None)
    paths = [str(ROOT / "core"), str(ROOT)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _execute(notebook: Any, env: dict[str, str], folder: Path = NOTEBOOKS) -> None:
    from nbclient import NotebookClient

    # The kernel inherits this process's environment; swap it in for the duration of the run.
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        client = NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            store_widget_state=False,
            record_timing=False,
            resources={"metadata": {"path": str(folder)}},
        )
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    notebook.metadata.pop("widgets", None)


_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _static_outputs(notebook: Any) -> None:
    """Keep only what a reader without a kernel can see, so re-executing changes nothing in the file.

    A widget view refers to a model that exists only in a live kernel (its random id would change on every
    run); the step's `text/html` and `text/plain` beside it are what GitHub, nbconvert and a kernel-less
    JupyterLab show. A live step also leaves an empty display behind (where its widget was while it ran).
    """
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            if "data" in output:
                output["data"].pop(_WIDGET_VIEW, None)
                if not output["data"]:
                    continue
            kept.append(output)
        cell.outputs = kept


def _setup_index(notebook: Any, name: str) -> int:
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and _SETUP_LINE.search(cell.source):
            return index
    raise SystemExit(f"{name}: no setup cell with a `%nighthawk replay PATH` line")


def _compact(store: Path) -> None:
    """Sort the recorded store, so that recording the same notebook again writes the same bytes."""
    if str(ROOT / "core") not in sys.path:
        sys.path.insert(0, str(ROOT / "core"))
    from nighthawk.replay import ReplayStore

    ReplayStore(store).compact()


def record(path: Path, *, model: str | None = None) -> tuple[Path, Any]:
    """Record the store of the notebook at `path` from a real model (over HTTP), then compact it.

    Returns the store's path and the recording run of the notebook, with its static outputs.

    The kernel runs in the folder of the notebook and gets this process's environment (the provider's key
    and `OPENAI_BASE_URL`). `model` replaces the model the setup cell would record from.
    """
    import copy

    import nbformat

    notebook = nbformat.read(path, as_version=4)
    index = _setup_index(notebook, path.stem)
    store = path.parent / _SETUP_LINE.search(notebook.cells[index].source)["store"]
    store.unlink(missing_ok=True)
    recording = copy.deepcopy(notebook)
    if model is not None:
        recording.cells[index].source = _recording_cell(notebook.cells[index].source, model)
    _execute(recording, _environment("record", real=True), folder=path.parent)
    _compact(store)
    _static_outputs(recording)
    return store, recording


def replay(path: Path) -> Any:
    """Execute the notebook at `path` from its store alone, offline; the notebook with its static outputs."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    _execute(notebook, _environment("replay"), folder=path.parent)
    _static_outputs(notebook)
    return notebook


def make(path: Path, *, real: bool, model: str | None = None) -> None:
    import copy

    import nbformat

    name = path.stem
    notebook = nbformat.read(path, as_version=4)
    index = _setup_index(notebook, name)
    store = NOTEBOOKS / _SETUP_LINE.search(notebook.cells[index].source)["store"]
    store.unlink(missing_ok=True)
    started = time.perf_counter()
    if real:
        record(path, model=model)
    else:
        if name not in ANSWERS:
            print(f"{name}: no scripted answers; skipped (it makes no model request)")
        else:
            authoring = copy.deepcopy(notebook)
            authoring.cells[index].source = _authoring_cell(notebook.cells[index].source, name)
            _execute(authoring, _environment("record"))
            _compact(store)
    # The saved outputs come from the store alone, exactly as nbval and the main job will see them.
    _execute(notebook, _environment("replay"))
    _static_outputs(notebook)
    nbformat.write(notebook, path)
    entries = store.read_text(encoding="utf-8").count("\n- block: ") if store.exists() else 0
    print(f"{name}: {entries} exchanges in {store.relative_to(ROOT)}, outputs saved ({time.perf_counter() - started:.1f} s)")


def _select(names: Sequence[str]) -> list[Path]:
    every = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
    if not names:
        return every
    chosen = []
    for name in names:
        stem = Path(name).stem
        matches = [path for path in every if path.stem == stem]
        if not matches:
            raise SystemExit(f"no notebook {name!r}; choose from {', '.join(path.stem for path in every)}")
        chosen.extend(matches)
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="names of notebooks to redo (default: all)")
    parser.add_argument(
        "--real",
        action="store_true",
        help="record from the real model of each setup cell (needs OPENAI_API_KEY, or OPENAI_BASE_URL) "
        "instead of authoring scripted answers",
    )
    parser.add_argument("--model", help="with --real: record from this `provider:model` instead of the setup cell's")
    parser.add_argument("--base-url", help="with --real: the OpenAI-compatible server to record from (OPENAI_BASE_URL)")
    args = parser.parse_args(argv)
    if (args.model or args.base_url) and not args.real:
        parser.error("--model and --base-url choose what --real records from; add --real")
    if args.base_url:
        os.environ["OPENAI_BASE_URL"] = args.base_url
        os.environ.setdefault("OPENAI_API_KEY", "local")  # the client insists on a key; a local server ignores it
    if args.real and not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        parser.error("--real records from the real model: set OPENAI_API_KEY (or OPENAI_BASE_URL) first")
    for path in _select(args.notebooks):
        make(path, real=args.real, model=args.model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
