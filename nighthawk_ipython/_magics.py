"""`%%natural` and `%nighthawk`: thin doors from a notebook onto the core's frame stage.

`%%natural` parses the cell as a Natural program, builds a frame from the notebook namespace and hands both
to `nighthawk.road.runner.run_block`. Only after the block succeeded are the write bindings committed into the
namespace, in one `update`; a `return` outcome becomes the cell's value (`Out[n]`), a `raise` outcome
raises in the cell. `%nighthawk` changes the kernel's settings. Bad options raise `UsageError`; real
failures propagate, so nbclient and nbval see a failed cell.

IPython imports this module when a magic is first used (see `_table`), so the core it needs is imported
here at the top; only the replay store, which brings pydantic-ai, waits for `%nighthawk replay`.
"""

from __future__ import annotations

import inspect
import shlex
import textwrap
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import TraitError

from nighthawk._report import shown_short
from nighthawk.budget import UsageBudget, budget, session_usage
from nighthawk.configuration import DEFAULT_MODEL
from nighthawk.errors import NighthawkError, last_error, record_error
from nighthawk.oversight._oversee import isolation_in_force, overseeing_also
from nighthawk.program.block import parse_program
from nighthawk.road.runner import run_block
from nighthawk.road.runtime import scope

from ._code import put_step_code
from ._confirm import CONFIRM
from ._isolated import ISOLATED
from ._records import CELL_STEP_PREFIX
from ._interpolate import interpolate
from ._namespace import build_frame
from ._settings import BUDGET_FIGURES, BUDGET_KEYS, DISPLAY_MODES, LIMIT_KEYS, model_problem
from ._state import state_for
from ._text import cost_text

__all__ = ["CELL_OUTCOMES", "NighthawkMagics"]

CELL_OUTCOMES: tuple[str, ...] = ("pass", "return", "raise")
"""Outcome kinds a cell can end with (`break` and `continue` need an enclosing loop)."""

_SUBCOMMANDS = (
    "model", "display", "limits", "confirm", "isolated", "status", "usage", "replay", "traceback", "code", "prompt",
    "help",
)
_SWITCH = {"on": True, "off": False}

# The program starts on the line after `%%natural`, which is line 1 of the cell.
_PROGRAM_LINE = 2


def _unquote(value: str) -> str:
    """Drop one pair of matching quotes, which `parse_argstring` keeps (`-m 'a b'` arrives quoted)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _without_comment(line: str) -> str:
    """The magic line up to a `#` that starts a word outside quotes: the rest is a comment, as in Python."""
    quote = None
    for index, char in enumerate(line):
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line


def _deny_kinds(values: list[str] | None) -> frozenset[str]:
    kinds: set[str] = set()
    for value in values or ():
        for kind in _unquote(value).split(","):
            kind = kind.strip()
            if not kind:
                continue
            if kind not in CELL_OUTCOMES:
                raise UsageError(
                    f"%%natural --deny: {kind!r} is not an outcome a cell can end with; "
                    f"choose from {', '.join(CELL_OUTCOMES)}"
                )
            kinds.add(kind)
    return frozenset(kinds)


@magics_class
class NighthawkMagics(Magics):
    """The `%%natural` cell magic and the `%nighthawk` settings magic."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self._state = state_for(shell)

    # --- %%natural ---------------------------------------------------------------------------------

    @magic_arguments()
    @argument(
        "-m",
        "--model",
        metavar="MODEL",
        help="Model for this cell only: a `provider:model` string, or a notebook variable holding a "
        "pydantic-ai Model or a StepExecutor.",
    )
    @argument(
        "--deny",
        action="append",
        metavar="KINDS",
        help="Outcome kinds this cell may not end with (pass, return, raise); repeat or separate with commas.",
    )
    @argument(
        "--display",
        type=_unquote,
        choices=DISPLAY_MODES,
        help="How to show the step for this cell: widget, html, text or none (default: the kernel setting).",
    )
    @argument(
        "--budget",
        action="append",
        metavar="KEY=VALUE",
        help="Bound what this cell's steps spend together: requests, total_tokens, cost_usd, wall_time_s; "
        "repeat or separate with commas (`--budget requests=5,cost_usd=0.01`).",
    )
    @argument(
        "--confirm",
        action="store_true",
        help="Show each tool call of this cell and wait for `y` before it runs (no answer refuses it).",
    )
    @argument(
        "--isolated",
        action="store_true",
        help="Run the model's code of this cell in a child process walled by the operating system (Linux; see "
        "`nighthawk.oversight.isolated`): in-place changes stay there, write bindings come back.",
    )
    @argument(
        "-f",
        "--interpolate",
        action="store_true",
        help="Fill `{expression}` fields from the namespace like an f-string before parsing (`{{` and `}}` "
        "are literal braces).",
    )
    @cell_magic
    def natural(self, line: str, cell: str) -> Any:
        """Run the cell as a Natural program against the notebook namespace.

        `<name>` reads a notebook variable, `<:name>` writes one (committed only when the step succeeds).
        The cell may open with YAML frontmatter (`deny: [raise]`). A `return` outcome is the cell's value;
        a `raise` outcome raises in the cell.
        """
        args = parse_argstring(self.natural, _without_comment(line))
        deny = _deny_kinds(args.deny)
        bound = _cell_budget_option(args.budget)
        user_ns = self.shell.user_ns
        text = cell
        if args.interpolate:
            text = _interpolated(cell, user_ns)
        executor = None
        if args.model:
            model, _ = self._model_value(_unquote(args.model), "%%natural --model")
            executor = self._state.settings.build_executor(model)

        try:
            with budget(bound) if bound is not None else nullcontext():
                result = self._run(
                    text, deny=deny, executor=executor, display=args.display, confirm=args.confirm, isolated=args.isolated
                )
        except (NighthawkError, NameError, KeyboardInterrupt) as exc:
            if isinstance(exc, NameError):  # a read binding the namespace lacks: the runner never saw it
                record_error(exc)
            # The message says what happened; frames inside the runner, its background loop and this magic
            # would only bury it. The cause chain (`raise ... from`) stays attached to the exception.
            raise shown_short(exc).with_traceback(None)  # noqa: B904 - re-raising the same exception
        if result.exception is not None:
            raise result.exception
        user_ns.update(result.values)
        if result.kind == "return":
            return result.value
        return None

    def _run(
        self, text: str, *, deny: frozenset[str], executor: Any, display: str | None, confirm: bool, isolated: bool
    ) -> Any:
        """Parse the cell, build its frame from the namespace and run it; return the `BlockResult`."""
        # IPython has already counted the running cell when it stores history, so its number is one less.
        filename = f"{CELL_STEP_PREFIX}{max(self.shell.execution_count - 1, 1)}]"
        program = parse_program(textwrap.dedent(text), filename=filename, line=_PROGRAM_LINE)
        if deny:
            program = replace(program, denied=program.denied | deny)
        frame = build_frame(
            self.shell, program, step_id=f"{filename}:{_PROGRAM_LINE}", filename=filename, line=_PROGRAM_LINE
        )
        self._state.ready()
        executor_scope = scope(step_executor=executor) if executor is not None else nullcontext()
        confirm_scope = overseeing_also(CONFIRM) if confirm else nullcontext()
        # Under a scope or `%nighthawk isolated on` that isolates already, the cell keeps those walls.
        isolated_scope = overseeing_also(ISOLATED) if isolated and isolation_in_force() is None else nullcontext()
        with self._state.display_mode(display), executor_scope, confirm_scope, isolated_scope:
            try:
                return run_block(program, frame)
            finally:
                self._state.displayer.flush()  # the step's display goes before the cell's value or error

    def _model_value(self, name: str, where: str) -> tuple[object, str]:
        """Resolve a model given on a magic line: a `provider:model` string, or a namespace variable.

        Returns:
            The string or object, and the variable name it came from (empty for a string).
        """
        if ":" in name:
            return name, ""
        if name.isidentifier() and name in self.shell.user_ns:
            value = self.shell.user_ns[name]
            if isinstance(value, str):
                return self._model_value(value, where)[0], ""
            problem = model_problem(value)
            if problem is not None:
                raise UsageError(f"{where}: variable {name!r} holds {problem}")
            return value, name
        raise UsageError(
            f"{where}: {name!r} is neither a `provider:model` string nor a notebook variable; give a model such "
            "as 'openai-responses:gpt-5.4-nano' or the name of a variable holding a pydantic-ai Model or a "
            "StepExecutor"
        )

    # --- %nighthawk --------------------------------------------------------------------------------

    @magic_arguments()
    @argument("command", type=_unquote, choices=_SUBCOMMANDS, help="What to show or change.")
    @argument(
        "values",
        nargs="*",
        help="model: NAME_OR_VARIABLE; display: MODE; limits: key=value ...; confirm: on|off; isolated: on|off; "
        "replay: PATH; code: [STEP]",
    )
    @argument("--reset", action="store_true", help="usage: print the totals, then start counting from zero.")
    @argument("--record", action="store_true", help="replay: record every exchange with the real model.")
    @argument("--auto", action="store_true", help="replay: replay stored exchanges, record the missing ones.")
    @argument("--print", action="store_true", dest="echo", help="code: print the code as well.")
    @line_magic
    def nighthawk(self, line: str) -> None:
        """Show or change the kernel's Nighthawk settings.

        `%nighthawk model provider:model` or `%nighthawk model VARIABLE` (a pydantic-ai Model or a
        StepExecutor), `%nighthawk display widget|html|text|none`, `%nighthawk limits key=value ...` (context
        limits, budgets such as `step.requests=20` or `cell.cost_usd=0.5`, `request_timeout_s`, `max_retries`,
        `max_repeated_calls`, `max_idle_rounds`; `None` lifts a bound), `%nighthawk confirm on|off` (show every tool call and wait for `y` before it
        runs), `%nighthawk isolated on|off` (run the model's code of every step in a walled child process),
        `%nighthawk status` (also where requests go and what bounds them),
        `%nighthawk usage [--reset]` (requests, tokens and cost of this kernel by model),
        `%nighthawk replay PATH [--record|--auto]` (answer from
        a replay store), `%nighthawk traceback` (the whole cause chain of the last failed block),
        `%nighthawk code [STEP] [--print]` (the Python the last step ran, or the step of a cell's execution
        count or a step id, as the next cell),
        `%nighthawk prompt PROGRAM` (what the next step of PROGRAM would send, with each part's tokens),
        `%nighthawk help` (this text). The same settings are `%config NighthawkSettings.*` and
        `nighthawk_ipython.configure(...)`. A `#` starts a comment, as in Python.
        """
        command, _, rest = line.strip().partition(" ")
        if command == "prompt":  # the rest of the line is a program, taken as written (quotes, `#` and all)
            from ._prompt_view import prompt_report

            print(prompt_report(self.shell, self._state, rest))
            return
        args = parse_argstring(self.nighthawk, _without_comment(line))
        values = [_unquote(value) for value in args.values]
        if (args.record or args.auto) and args.command != "replay":
            raise UsageError(f"%nighthawk {args.command}: --record and --auto belong to `%nighthawk replay`")
        if args.reset and args.command != "usage":
            raise UsageError(f"%nighthawk {args.command}: --reset belongs to `%nighthawk usage`")
        if args.echo and args.command != "code":
            raise UsageError(f"%nighthawk {args.command}: --print belongs to `%nighthawk code`")
        settings = self._state.settings
        match args.command:
            case "status":
                self._expect(values, 0, "status", "")
                print(settings.describe())
            case "model":
                if not values:
                    print(settings.describe().splitlines()[0])
                    return
                self._expect(values, 1, "model", "NAME_OR_VARIABLE")
                value, source = self._model_value(values[0], "%nighthawk model")
                try:
                    settings.use_model(value, source=source)
                except TraitError as exc:
                    raise UsageError(f"%nighthawk model: {exc}") from exc
            case "display":
                if not values:
                    print(f"display: {settings.display}")
                    return
                self._expect(values, 1, "display", "MODE")
                if values[0] not in DISPLAY_MODES:
                    raise UsageError(
                        f"%nighthawk display: {values[0]!r} is not a display mode; choose from {', '.join(DISPLAY_MODES)}"
                    )
                settings.display = values[0]
            case "limits":
                if not values:
                    print("\n".join(line for line in settings.describe().splitlines() if line.startswith(("limits:", "budget:", "requests:"))))
                    return
                limits, budgets = _parse_limits(values)
                try:
                    settings.budgets = {**settings.budgets, **budgets}
                except TraitError as exc:
                    raise UsageError(f"%nighthawk limits: {exc}") from exc
                settings.limits = {**settings.limits, **limits}
            case "confirm" | "isolated":
                if not values:
                    print(f"{args.command}: {'on' if getattr(settings, args.command) else 'off'}")
                    return
                self._expect(values, 1, args.command, "on|off")
                if values[0] not in _SWITCH:
                    raise UsageError(
                        f"%nighthawk {args.command}: {values[0]!r} is neither on nor off; use `%nighthawk {args.command} on` "
                        "or `off`"
                    )
                setattr(settings, args.command, _SWITCH[values[0]])
            case "usage":
                self._expect(values, 0, "usage", "[--reset]")
                _print_usage(reset=args.reset)
            case "replay":
                self._replay(values, record=args.record, auto=args.auto)
            case "traceback":
                self._expect(values, 0, "traceback", "")
                _print_last_error()
            case "code":
                if len(values) > 1:
                    self._expect(values, 1, "code", "[STEP] [--print]")
                key = values[0] if values else None
                put_step_code(self.shell, self._state.displayer, key, echo=args.echo)
            case "help":
                self._expect(values, 0, "help", "")
                # What `%nighthawk?` shows, without the reStructuredText marker that opens its usage block.
                print(inspect.getdoc(self.nighthawk).removeprefix("::\n\n"))
            case other:  # argparse's choices= keeps anything else out
                raise AssertionError(other)

    @staticmethod
    def _expect(values: list[str], count: int, command: str, usage: str) -> None:
        if len(values) != count:
            raise UsageError(
                f"%nighthawk {command}: expected {count} argument{'s' if count != 1 else ''}, got "
                f"{' '.join(shlex.quote(value) for value in values) or 'none'}; usage: %nighthawk {command} {usage}".rstrip()
            )

    def _replay(self, values: list[str], *, record: bool, auto: bool) -> None:
        """Answer steps from the replay store at PATH, wrapping the model in force (used only to record)."""
        self._expect(values, 1, "replay", "PATH [--record|--auto]")
        if record and auto:
            raise UsageError("%nighthawk replay: choose one of --record and --auto")
        from nighthawk.replay import ReplayModel  # imports pydantic-ai: only when a replay store is asked for

        settings = self._state.settings
        wrapped = settings.model_object if settings.model_object is not None else (settings.model or None)
        if isinstance(wrapped, ReplayModel):  # switching stores: keep recording from the same model
            wrapped = wrapped._spec
        if wrapped is not None and not isinstance(wrapped, str) and callable(getattr(wrapped, "run_step", None)):
            raise UsageError(
                "%nighthawk replay: the model in force is a step executor, not a model; replay wraps a "
                "pydantic-ai model or a `provider:model` string (`%nighthawk model ...` first)"
            )
        # Without a flag the mode comes from NIGHTHAWK_REPLAY_MODE (default `replay`), so a whole notebook can
        # be re-recorded from the command line without editing it.
        mode = "record" if record else "auto" if auto else None
        if wrapped is None:
            wrapped = DEFAULT_MODEL  # only built when a request must reach a real model
        try:  # recording checks here that the store can be written, before any request is paid for
            model = ReplayModel(wrapped, values[0], mode)
        except NighthawkError as exc:
            raise UsageError(f"%nighthawk replay: {exc}") from exc
        settings.use_model(model, source=f"replay {values[0]} ({model.mode})")


def _interpolated(cell: str, namespace: dict[str, Any]) -> str:
    """`-f`: fill the cell's fields; a field that raises fails the cell with one line naming it."""
    try:
        return interpolate(cell, namespace)
    except UsageError:
        raise
    except Exception as exc:
        record_error(exc)
        raise UsageError(
            f"%%natural -f: a `{{...}}` field raised {type(exc).__name__}: {exc}. Fix the field, or write `{{{{` "
            "and `}}` for literal braces (`%nighthawk traceback` shows where it failed)"
        ) from exc


def _print_last_error() -> None:
    import traceback

    error = last_error()
    if error is None:
        print("no Natural block has failed in this kernel yet")
        return
    traceback.print_exception(type(error), error, error.__traceback__)


def _parse_limits(values: list[str]) -> tuple[dict[str, int], dict[str, Any]]:
    """`key=value` items of `%nighthawk limits`: the context limits, then the budget keys."""
    keys = ", ".join((*LIMIT_KEYS, *BUDGET_KEYS))
    limits: dict[str, int] = {}
    budgets: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep:
            raise UsageError(f"%nighthawk limits: {item!r} is not `key=value`; keys are {keys}")
        key, raw = key.strip(), raw.strip()
        if key in BUDGET_KEYS:
            budgets[key] = _number(raw, f"%nighthawk limits: {key}")
            continue
        if key not in LIMIT_KEYS:
            raise UsageError(f"%nighthawk limits: unknown limit {key!r}; choose from {keys}")
        try:
            value = int(raw.replace("_", ""))
        except ValueError:
            value = -1
        if value < (0 if key == "object_max_methods" else 1):  # 0 methods: none listed
            raise UsageError(f"%nighthawk limits: {key} must be a positive integer, got {raw!r}")
        limits[key] = value
    return limits, budgets


def _number(raw: str, where: str) -> int | float | None:
    """A budget value as typed: `None`/`none` lifts the bound, `20` is an int, `0.5` a float."""
    if raw.lower() == "none":
        return None
    text = raw.replace("_", "")
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{where} must be a number or None, got {raw!r}") from None


def _cell_budget_option(values: list[str] | None) -> UsageBudget | None:
    """The `UsageBudget` of `%%natural --budget`, or `None` without the option."""
    if not values:
        return None
    figures: dict[str, Any] = {}
    for item in ",".join(_unquote(value) for value in values).split(","):
        key, sep, raw = item.strip().partition("=")
        if not item.strip():
            continue
        if not sep or key.strip() not in BUDGET_FIGURES:
            raise UsageError(
                f"%%natural --budget: {item.strip()!r} is not `key=value` with a key of {', '.join(BUDGET_FIGURES)}"
            )
        figures[key.strip()] = _number(raw.strip(), f"%%natural --budget {key.strip()}")
    try:
        return UsageBudget(**figures)
    except ValueError as exc:
        raise UsageError(f"%%natural --budget: {exc}") from exc


def _print_usage(*, reset: bool) -> None:
    """`%nighthawk usage`: this kernel's requests, tokens and cost by model, as a small table."""
    ledger = session_usage()
    totals = ledger.by_model()
    if reset:
        ledger.reset()
    if not totals:
        print("no model requests in this kernel yet")
        return
    rows = [["model", "requests", "input tokens", "cached", "output tokens", "cost"]]
    rows += [
        [model, str(t.requests), str(t.input_tokens), str(t.cache_read_tokens), str(t.output_tokens), cost_text(t)]
        for model, t in sorted(totals.items())
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) if column == 0 else cell.rjust(width) for column, (cell, width) in enumerate(zip(row, widths))).rstrip())
    if reset:
        print("(reset: counting starts again from zero)")
