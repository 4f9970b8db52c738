"""`%nighthawk code` (nighthawk_ipython/_code.py) and the "As Python" section of step displays, with a real shell.

Each step here is run by a scripted pydantic-ai model through the real agent executor, one tool call per
model response, so calls can fail and the step goes on, as with a real model.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output
from kernel_scripts import assign, outcome, scripted
from pydantic_ai.messages import ToolCallPart

SECRET = "sk-proj-Q7vR2mZ9pL4tK8wN3bY6cJ1hF5dS0aGx"


def evaluate(expression: str) -> ToolCallPart:
    return ToolCallPart("nh_eval", {"expression": expression})


def run_natural(shell: Any, program: str) -> Any:
    with capture_output() as captured:
        result = shell.run_cell(f"%%natural\n{program}")
    assert result.error_in_exec is None or program.startswith("Give up"), result.error_in_exec
    captured.result = result.result
    return captured


def produced_code(shell: Any, line: str = "") -> str:
    """What `%nighthawk code` puts in the next cell (the shell keeps it as its next input)."""
    shell.rl_next_input = None
    result = shell.run_cell(f"%nighthawk code {line}")
    assert result.error_in_exec is None, result.error_in_exec
    return shell.rl_next_input


@pytest.fixture
def orders(shell: Any, use_model: Any) -> dict[str, Any]:
    """A step that appends to a list, assigns twice and returns; the namespace it started from."""
    shell.user_ns.update(orders=[120, 80, 300], threshold=100, seen=[])
    start = copy.deepcopy({name: shell.user_ns[name] for name in ("orders", "threshold", "seen")})
    use_model(
        scripted(
            [evaluate("seen.append(len(orders))")],
            [assign("big", "[o for o in orders if o > threshold]")],
            [assign("total", "sum(big)")],
            [outcome("return", return_expression="total / len(big)")],
        )
    )
    ran = run_natural(shell, "Note how many <orders> there are in <seen>; keep those above <threshold> in <:big>, their "
                      "sum in <:total>, and return the mean.")
    return {"start": start, "returned": ran.result}


def test_the_next_cell_holds_the_steps_calls_in_order_and_its_return_as_last_expression(shell: Any, orders: Any) -> None:
    assert produced_code(shell) == (
        "seen.append(len(orders))\n"
        "big = [o for o in orders if o > threshold]\n"
        "total = sum(big)\n"
        "total / len(big)\n"
    )


def test_the_code_run_from_the_starting_namespace_gives_the_committed_values(shell: Any, orders: Any) -> None:
    committed = {name: copy.deepcopy(shell.user_ns[name]) for name in ("big", "total", "seen")}
    returned = orders["returned"]
    code = produced_code(shell)
    for name in committed:
        shell.user_ns.pop(name, None)
    shell.user_ns.update(copy.deepcopy(orders["start"]))
    result = shell.run_cell(code)
    assert {name: shell.user_ns[name] for name in committed} == committed
    assert result.result == returned


def test_print_shows_the_code_too(shell: Any, orders: Any) -> None:
    with capture_output() as captured:
        shell.run_cell("%nighthawk code --print")
    assert captured.stdout == shell.rl_next_input


def test_a_cell_is_found_by_its_execution_count_and_by_its_step_id(shell: Any, orders: Any) -> None:
    view = _displayer(shell).find_step(None)
    count = view.step_id.removeprefix("In[").partition("]")[0]
    last = produced_code(shell)
    assert produced_code(shell, count) == last
    assert produced_code(shell, view.step_id) == last


def test_failed_calls_are_left_out_and_counted(shell: Any, use_model: Any) -> None:
    shell.user_ns["prices"] = [3, 4]
    use_model(
        scripted(
            [assign("total", "sum(price)")],  # a NameError: the model reads the error and tries again
            [assign("total", "sum(prices)")],
            [outcome("pass")],
        )
    )
    run_natural(shell, "Sum <prices> into <:total>.")
    assert produced_code(shell) == (
        "# left out: 1 call that failed (what a failed call changed before its error stays changed)\n"
        "total = sum(prices)\n"
    )


def test_a_raise_outcome_is_a_raise_statement(shell: Any, use_model: Any) -> None:
    shell.user_ns["rows"] = []
    use_model(scripted([outcome("raise", raise_error_type="ValueError", raise_message="no rows to sum")]))
    run_natural(shell, "Give up with a ValueError when <rows> is empty.")
    assert produced_code(shell) == "raise ValueError('no rows to sum')\n"


def test_a_raise_after_an_assignment_says_the_assignment_was_not_committed(shell: Any, use_model: Any) -> None:
    shell.user_ns["rows"] = [3, -1]
    use_model(scripted([assign("total", "sum(rows)")], [outcome("raise", raise_error_type="ValueError", raise_message="a negative row")]))
    run_natural(shell, "Give up with a ValueError when one of <rows> is negative; else sum them into <:total>.")
    assert "total" not in shell.user_ns
    assert produced_code(shell) == (
        "total = sum(rows)\n"
        "# the step raised here, so none of its write bindings was committed\n"
        "raise ValueError('a negative row')\n"
    )


def test_a_bidi_override_the_model_wrote_reaches_neither_the_next_cell_nor_the_display(shell: Any, use_model: Any) -> None:
    shell.user_ns["name"] = "ada"
    # Shown as it stands, the override would make the line read `greeting = 'hi ' + name  # is_admin = True`.
    expression = "'hi ' + name  # \u202e eurT = nimda_si"
    use_model(scripted([assign("greeting", expression)], [outcome("pass")]))
    captured = run_natural(shell, "Greet <name> in <:greeting>.")
    assert produced_code(shell) == "greeting = 'hi ' + name\n"
    page = captured.outputs[0].data["text/html"]
    section = page[page.index('<details class="nh-python">') :]
    assert "\u202e" not in section[: section.index("</details>")]


ASYNC_CELL = """
async def fetch_rate(currency):
    fetched.append(currency)
    return {"USD": 0.92}[currency]
"""


def test_an_async_call_the_runtime_awaited_is_awaited_in_the_code(shell: Any, use_model: Any) -> None:
    shell.run_cell(ASYNC_CELL)
    shell.user_ns["fetched"] = []
    # The model calls the coroutine function without `await`: the runtime awaits the value for it.
    use_model(scripted([evaluate("fetch_rate('USD')")], [assign("rate", "fetch_rate('USD')")], [outcome("pass")]))
    run_natural(shell, "Fetch the USD rate into <:rate>, noting it in <fetched>.")
    committed = (shell.user_ns.pop("rate"), shell.user_ns["fetched"])
    code = produced_code(shell)
    assert code == "await fetch_rate('USD')\nrate = await fetch_rate('USD')\n"
    shell.user_ns["fetched"] = []
    shell.run_cell(code)
    assert (shell.user_ns["rate"], shell.user_ns["fetched"]) == committed == (0.92, ["USD", "USD"])


ASYNC_FUNCTION_CELL = """
import nighthawk as nh

@nh.natural_function
async def usd_rate():
    \"\"\"natural
    Return the USD rate.
    \"\"\"
"""


def test_an_async_functions_return_the_runtime_awaited_is_awaited_in_the_code(shell: Any, use_model: Any) -> None:
    shell.run_cell(ASYNC_CELL)
    shell.run_cell(ASYNC_FUNCTION_CELL)
    shell.user_ns["fetched"] = []
    use_model(scripted([outcome("return", return_expression="fetch_rate('USD')")]))
    with capture_output():
        shell.run_cell("rate = await usd_rate()")
    assert shell.user_ns["rate"] == 0.92
    assert produced_code(shell) == "result = await fetch_rate('USD')  # the block returns this\n"


def test_a_pass_outcome_adds_nothing(shell: Any, use_model: Any) -> None:
    shell.user_ns["name"] = "ada"
    use_model(scripted([assign("greeting", "f'Hello, {name.title()}!'")], [outcome("pass")]))
    run_natural(shell, "Greet <name> in <:greeting>.")
    assert produced_code(shell) == "greeting = f'Hello, {name.title()}!'\n"


def test_a_secret_read_by_name_stays_the_name_and_a_written_secret_stays_masked(shell: Any, use_model: Any) -> None:
    shell.user_ns["api_key"] = SECRET
    use_model(
        scripted(
            [evaluate(f"len({SECRET!r}) == len(api_key)")],
            [assign("headers", "{'Authorization': 'Bearer ' + api_key}")],
            [outcome("pass")],
        )
    )
    captured = run_natural(shell, "Build <:headers> for <api_key>.")
    code = produced_code(shell)
    assert code == (
        "# a secret in it is masked (<masked>): put it back to run it:\n"
        "# len('<masked>') == len(api_key)\n"
        "headers = {'Authorization': 'Bearer ' + api_key}\n"
    )
    shown = captured.outputs[0].data
    assert SECRET not in shown["text/html"] and SECRET not in shown["text/plain"]
    committed = shell.user_ns.pop("headers")
    shell.run_cell(code)
    assert shell.user_ns["headers"] == committed == {"Authorization": f"Bearer {SECRET}"}


def test_a_secret_masked_with_your_own_placeholder_is_a_comment_too(shell: Any) -> None:
    import nighthawk

    shell.user_ns["api_key"] = SECRET
    shell.user_ns["runner"] = nighthawk.AgentStepExecutor.from_configuration(
        configuration=nighthawk.StepExecutorConfiguration(
            model=scripted([assign("prefix", f"{SECRET!r}[:3]")], [outcome("pass")]),
            context_redaction=nighthawk.ContextRedaction(placeholder="[secret]"),
        )
    )
    shell.run_line_magic("nighthawk", "model runner")
    run_natural(shell, "Keep the first letters of <api_key> in <:prefix>.")
    assert produced_code(shell) == "# a secret in it is masked ([secret]): put it back to run it:\n# prefix = '[secret]'[:3]\n"


def test_the_step_display_has_the_code_in_a_folded_as_python_section(shell: Any, orders: Any) -> None:
    page = _displayer(shell).last_view.html()
    section = page[page.index('<details class="nh-python">') :]
    assert section.startswith('<details class="nh-python"><summary>As Python')
    assert "user-select:all" in section
    assert "big = [o for o in orders if o &gt; threshold]\ntotal = sum(big)\n" in section


def test_the_step_text_has_the_code_under_as_python(shell: Any, orders: Any) -> None:
    text = _displayer(shell).last_view.text()
    assert "  as Python:\n    seen.append(len(orders))\n    big = [o for o in orders if o > threshold]\n" in text


def test_the_live_widget_shows_the_code_once_the_step_finished(shell: Any, orders: Any) -> None:
    assert "big = [o for o in orders if o &gt; threshold]" in _displayer(shell).last_view.live_html()


FUNCTION_CELL = '''
import nighthawk as nh

@nh.natural_function
def above(orders, threshold):
    big = []
    """natural
    Keep the <orders> above <threshold> in <:big>, and return how many there are.
    """
'''


def test_a_natural_functions_step_is_code_that_gives_its_values(shell: Any, use_model: Any) -> None:
    use_model(scripted([assign("big", "[o for o in orders if o > threshold]")], [outcome("return", return_expression="len(big)")]))
    shell.run_cell(FUNCTION_CELL)
    with capture_output() as captured:
        shell.run_cell("count = above([120, 80, 300], 100)")
    code = produced_code(shell)
    assert code == (
        "orders = [120, 80, 300]  # the argument\n"
        "threshold = 100  # the argument\n"
        "big = [o for o in orders if o > threshold]\n"
        "result = len(big)  # the block returns this\n"
    )
    assert "as Python:" in captured.outputs[0].data["text/plain"]
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    assert (namespace["big"], namespace["result"]) == ([120, 300], shell.user_ns["count"])


SORT_CELL = '''
import nighthawk as nh

@nh.natural_function
def smallest(xs, n):
    """natural
    Sort <xs> in place and return its first <n> items.
    """
'''


def sorting_model() -> Any:
    """A model that sorts `xs` in place, then returns its first `n` items."""
    return scripted([evaluate("xs.sort()")], [outcome("return", return_expression="xs[:n]")])


def test_a_natural_functions_parameters_are_bound_to_the_notebook_names_the_call_gave(shell: Any, use_model: Any) -> None:
    use_model(sorting_model())
    shell.run_cell(SORT_CELL)
    shell.user_ns["scores"] = [7, 3, 9, 1]
    with capture_output():
        shell.run_cell("lowest = smallest(scores, 2)")
    assert produced_code(shell) == (
        "xs = scores  # the argument\n"
        "n = 2  # the argument\n"
        "xs.sort()\n"
        "result = xs[:n]  # the block returns this\n"
    )


def test_a_natural_functions_code_runs_as_written_among_the_notebooks_names_and_gives_its_result(
    shell: Any, use_model: Any
) -> None:
    use_model(sorting_model())
    shell.run_cell(SORT_CELL)
    shell.user_ns.update(scores=[7, 3, 9, 1], how_many=2)
    notebook = copy.deepcopy({name: shell.user_ns[name] for name in ("scores", "how_many")})
    with capture_output():
        shell.run_cell("lowest = smallest(scores, how_many)")
    namespace = dict(notebook)
    exec(produced_code(shell), namespace)
    assert namespace["result"] == shell.user_ns["lowest"] == [1, 3]
    assert namespace["scores"] == shell.user_ns["scores"] == [1, 3, 7, 9]


def test_an_argument_no_notebook_name_holds_is_a_comment_saying_what_to_bind(shell: Any, use_model: Any) -> None:
    use_model(sorting_model())
    shell.run_cell(SORT_CELL)
    with capture_output():
        shell.run_cell("lowest = smallest(list(range(100, 0, -1)), 2)")
    assert produced_code(shell).splitlines()[0] == (
        "# xs: the argument, a list no name in the notebook holds: bind xs to it to run this"
    )


def test_a_nested_natural_functions_step_is_found_by_its_step_id(shell: Any, use_model: Any) -> None:
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models.function import FunctionModel

    inner = [[assign("big", "[o for o in orders if o > threshold]")], [outcome("return", return_expression="len(big)")]]
    outer = [[evaluate("counts.append(above([120, 80, 300], 100))")], [outcome("pass")]]

    def script(messages: list[Any], info: Any) -> ModelResponse:
        rounds = inner if "Keep the <orders>" in str(messages[0]) else outer
        requests = sum(1 for message in messages if message.kind == "request")
        return ModelResponse(parts=rounds[requests - 1])

    use_model(FunctionModel(script, model_name="scripted"))
    shell.run_cell(FUNCTION_CELL)
    shell.user_ns["counts"] = []
    run_natural(shell, "Count the big orders with `above` into <counts>.")
    assert shell.user_ns["counts"] == [2]
    assert produced_code(shell) == "counts.append(above([120, 80, 300], 100))\n"
    nested = next(step.step_id for step in _displayer(shell).last_view.steps[0].children)
    assert produced_code(shell, nested) == (
        "orders = [120, 80, 300]  # the argument\n"
        "threshold = 100  # the argument\n"
        "big = [o for o in orders if o > threshold]\n"
        "result = len(big)  # the block returns this\n"
    )


def test_an_unknown_step_is_refused_with_the_steps_there_are(shell: Any, orders: Any) -> None:
    with pytest.raises(UsageError, match=r"no recorded step for 'In\[999\]:2'; give one of cells .*\d"):
        shell.run_line_magic("nighthawk", "code In[999]:2")
    assert shell.run_cell("%nighthawk code 99999").error_in_exec is not None


def test_an_unknown_cell_is_refused_with_every_step_that_can_be_given(shell: Any, use_model: Any) -> None:
    shell.user_ns["seen"] = []
    cells = []
    with capture_output():
        for turn in range(12):  # more cells than the listing used to name
            use_model(scripted([evaluate(f"seen.append({turn})")], [outcome("pass")]))
            shell.run_cell("%%natural\nNote this turn in <seen>.", store_history=True)
            cells.append(str(shell.execution_count - 1))
        use_model(sorting_model())
        shell.run_cell(SORT_CELL)
        shell.run_cell("first = smallest([3, 2], 1)", store_history=True)
    result = shell.run_cell("%nighthawk code 99999")
    listed = str(result.error_in_exec).partition("one of ")[2]
    keys = re.findall(r"In\[\d+\]:\d+|[\w.]+:\d+|\d+", listed)  # step ids (`In[3]:2`, `__main__:12`), cells
    assert set(cells) <= set(keys)
    assert all(produced_code(shell, key) for key in keys)  # each one gives its step


def test_no_step_yet_is_refused_with_what_to_do(shell: Any) -> None:
    from nighthawk_ipython._code import put_step_code

    with pytest.raises(UsageError, match=r"no finished step has been recorded .*run a `%%natural` cell or a natural function"):
        put_step_code(shell, None, None, echo=False)


@pytest.mark.parametrize(
    ("setting", "magic"), [("", "%%natural --display none"), ("%nighthawk display none", "%%natural")], ids=["cell", "kernel"]
)
def test_the_code_after_a_step_shown_with_display_none_is_that_steps(
    shell: Any, use_model: Any, orders: Any, setting: str, magic: str
) -> None:
    shell.user_ns["prices"] = [3, 4]
    use_model(scripted([assign("total", "sum(prices)")], [outcome("pass")]))
    shell.run_cell(setting)
    with capture_output() as captured:
        shell.run_cell(f"{magic}\nSum <prices> into <:total>.")
    assert captured.outputs == []
    assert produced_code(shell) == "total = sum(prices)\n"


def test_print_belongs_to_code(shell: Any) -> None:
    with pytest.raises(UsageError, match=r"%nighthawk status: --print belongs to `%nighthawk code`"):
        shell.run_line_magic("nighthawk", "status --print")


def _displayer(shell: Any) -> Any:
    from nighthawk_ipython._state import state_for

    return state_for(shell).displayer


KERNEL_FUNCTION_CELL = '''
scores = [7, 3, 9, 1]

@nighthawk.natural_function
def sort_scores(xs):
    """natural
    EVAL xs.sort()
    """
'''


def test_in_a_real_kernel_with_display_none_a_functions_code_runs_as_written() -> None:
    from live import live_kernel  # starts an ipykernel; `BASE_SETUP` turns the display off

    with live_kernel() as live:
        live.ok(KERNEL_FUNCTION_CELL)
        live.ok("sort_scores(scores)")
        code = live.ok("%nighthawk code --print").printed
        assert code.startswith("xs = scores  # the argument\nxs.sort()\n")
        live.ok("scores = [7, 3, 9, 1]")
        live.ok(code)
        assert live.ok("scores").result == "[1, 3, 7, 9]"
