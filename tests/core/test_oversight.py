"""Oversight hooks (`nighthawk.oversight`): tool calls seen before they run, steps seen before they commit."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import nighthawk as nh
from nighthawk import events, telemetry
from scripting import call, finish, scripted_executor

TOOLS = ("nh_eval", "nh_assign", "user_tool")


def _tool_call(tool: str) -> Any:
    """A call of `tool` that, when it runs, appends to the `ran` list of the block."""
    match tool:
        case "nh_eval":
            return call("nh_eval", expression="ran.append('nh_eval')")
        case "nh_assign":
            return call("nh_assign", target_path="result", expression="ran.append('nh_assign') or 'assigned'")
        case "user_tool":
            return call("user_tool", text="hello")
    raise AssertionError(tool)


def run_block(*tool_calls: Any, oversight: Any = None, result: str = "start") -> tuple[list[str], str, list[Any]]:
    """Run a block making `tool_calls` under `oversight`; return what ran, the committed result and the
    envelopes the model read."""
    executor, script = scripted_executor(list(tool_calls), [finish()])
    ran: list[str] = []

    @nh.natural_function
    def block(ran: list[str], result: str) -> str:
        """natural
        Work with <ran> and set <:result>.
        """
        return result

    with nh.run(executor):

        @nh.tool
        def user_tool(run_context, text: str) -> str:
            """Record that it ran."""
            ran.append("user_tool")
            return text.upper()

        with nh.scope(oversight=oversight) if oversight is not None else nh.scope():
            committed = block(ran, result)
    envelopes = [json.loads(text) for text in script.last_tool_results()]
    return ran, committed, envelopes


def tool_hook(decide: Callable[[Any], Any]) -> Any:
    return nh.oversight.Oversight(inspect_tool_call=decide)


def commit_hook(decide: Callable[[Any], Any]) -> Any:
    return nh.oversight.Oversight(inspect_step_commit=decide)


# --- tool calls -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", TOOLS)
def test_an_accepted_tool_call_runs(tool: str) -> None:
    ran, _, (envelope,) = run_block(_tool_call(tool), oversight=tool_hook(lambda call: nh.oversight.Accept()))
    assert ran == [tool]
    assert envelope["error"] is None


@pytest.mark.parametrize("tool", TOOLS)
def test_a_rejected_tool_call_does_not_run(tool: str) -> None:
    ran, _, _ = run_block(_tool_call(tool), oversight=tool_hook(lambda call: nh.oversight.Reject("not today")))
    assert ran == []


@pytest.mark.parametrize("tool", TOOLS)
def test_a_rejected_tool_call_reaches_the_model_as_an_execution_error_with_the_reason(tool: str) -> None:
    _, _, (envelope,) = run_block(_tool_call(tool), oversight=tool_hook(lambda call: nh.oversight.Reject("not today")))
    assert envelope["value"] is None
    assert envelope["error"]["kind"] == "execution"
    assert envelope["error"]["message"] == "not today"
    assert "did not run" in envelope["error"]["guidance"]


def test_the_model_recovers_after_a_rejected_call() -> None:
    def no_remove(call: Any) -> Any:
        expression = call.argument_name_to_value.get("expression", "")
        return nh.oversight.Reject("no deleting") if "remove" in expression else nh.oversight.Accept()

    ran, committed, _ = run_block(
        call("nh_eval", expression="ran.remove('x')"),
        call("nh_assign", target_path="result", expression="'done another way'"),
        oversight=tool_hook(no_remove),
    )
    assert committed == "done another way"


def test_the_tool_hook_sees_the_tool_name_arguments_and_step() -> None:
    seen: list[Any] = []

    def record(call: Any) -> Any:
        seen.append(call)
        return nh.oversight.Accept()

    run_block(call("nh_assign", target_path="result", expression="'x'"), oversight=tool_hook(record))
    (tool_call,) = seen
    assert tool_call.tool_name == "nh_assign"
    assert dict(tool_call.argument_name_to_value) == {"target_path": "result", "expression": "'x'"}
    assert tool_call.processed_natural_program == "Work with <ran> and set <:result>."
    assert tool_call.step_id.rpartition(":")[0].endswith("test_oversight")
    assert tool_call.step_locals["ran"] == []
    assert tool_call.execution_context.run_id


def test_an_async_tool_hook_can_reject() -> None:
    async def later(call: Any) -> Any:
        await asyncio.sleep(0)
        return nh.oversight.Reject("async says no")

    ran, _, (envelope,) = run_block(_tool_call("nh_eval"), oversight=tool_hook(later))
    assert ran == []
    assert envelope["error"]["message"] == "async says no"


def test_hooks_see_the_blocks_of_an_async_natural_function() -> None:
    executor, script = scripted_executor([call("nh_assign", target_path="result", expression="'x'")], [finish()])
    asked: list[str] = []

    async def refuse(call: Any) -> Any:
        asked.append(call.tool_name)
        return nh.oversight.Reject("not in async code either")

    @nh.natural_function
    async def block() -> str:
        result = "start"
        """natural
        Set <:result>.
        """
        return result

    async def main() -> str:
        with nh.run(executor), nh.scope(oversight=tool_hook(refuse)):
            return await block()

    assert asyncio.run(main()) == "start"
    assert asked == ["nh_assign"]


def test_a_sync_hook_runs_on_the_thread_that_started_the_block() -> None:
    threads: list[threading.Thread] = []

    def record(call: Any) -> Any:
        threads.append(threading.current_thread())
        return nh.oversight.Accept()

    run_block(_tool_call("nh_eval"), oversight=tool_hook(record))
    assert threads == [threading.current_thread()]


def test_a_tool_hook_that_raises_ends_the_step() -> None:
    def broken(call: Any) -> Any:
        raise RuntimeError("hook bug")

    with pytest.raises(RuntimeError, match="hook bug"):
        run_block(_tool_call("nh_eval"), oversight=tool_hook(broken))


def test_a_tool_hook_answering_something_else_ends_the_step_with_a_message() -> None:
    with pytest.raises(nh.NighthawkError, match=r"`inspect_tool_call` of .* returned True; return `Accept\(\)` or"):
        run_block(_tool_call("nh_eval"), oversight=tool_hook(lambda call: True))


def test_scope_oversight_must_be_an_oversight() -> None:
    executor, _ = scripted_executor()
    with nh.run(executor), pytest.raises(TypeError, match="`oversight` must be a `nighthawk.oversight.Oversight`"):
        with nh.scope(oversight=lambda call: None):  # type: ignore[arg-type]
            pass


def test_a_hook_that_is_not_a_function_is_refused_when_the_oversight_is_built() -> None:
    with pytest.raises(TypeError, match=r"`inspect_tool_call` must be a function or None, got 'yes'; pass a function"):
        nh.oversight.Oversight(inspect_tool_call="yes")  # type: ignore[arg-type]


def test_a_ready_policy_given_as_a_hook_is_refused_saying_where_it_goes() -> None:
    with pytest.raises(TypeError, match=r"`inspect_tool_call` must be a function or None, got Oversight\(.*; pass that oversight to `nighthawk.scope\(oversight=...\)` itself"):
        nh.oversight.Oversight(inspect_tool_call=nh.oversight.read_only())  # type: ignore[arg-type]


def test_combine_of_a_policy_not_called_says_to_call_it() -> None:
    with pytest.raises(TypeError, match=r"`combine` takes `Oversight` values, got <function read_only.*; build the ready ones by calling them"):
        nh.oversight.combine(nh.oversight.read_only, nh.oversight.allow_tools("nh_eval"))  # type: ignore[arg-type]


# --- commits --------------------------------------------------------------------------------------------

_ASSIGN = call("nh_assign", target_path="result", expression="'from the model'")


def test_an_accepted_commit_commits_the_proposed_values() -> None:
    _, committed, _ = run_block(_ASSIGN, oversight=commit_hook(lambda proposal: nh.oversight.Accept()))
    assert committed == "from the model"


def test_a_rejected_commit_raises_oversight_rejected_error() -> None:
    with pytest.raises(nh.oversight.OversightRejectedError, match="rejected the step at .*: not approved; .* not committed; changes made in place"):
        run_block(_ASSIGN, oversight=commit_hook(lambda proposal: nh.oversight.Reject("not approved")))


def test_oversight_rejected_error_is_an_execution_error() -> None:
    assert issubclass(nh.oversight.OversightRejectedError, nh.ExecutionError)


def test_a_rejected_commit_leaves_the_callers_locals_unchanged() -> None:
    executor, _ = scripted_executor([_ASSIGN], [finish()])

    @nh.natural_function
    def block() -> str:
        result = "before"
        try:
            """natural
            Set <:result>.
            """
        except nh.oversight.OversightRejectedError:
            pass
        return result

    with nh.run(executor), nh.scope(oversight=commit_hook(lambda proposal: nh.oversight.Reject("no"))):
        assert block() == "before"


def test_the_commit_hook_sees_the_proposed_bindings_and_outcome() -> None:
    seen: list[Any] = []

    def record(proposal: Any) -> Any:
        seen.append(proposal)
        return nh.oversight.Accept()

    run_block(_ASSIGN, oversight=commit_hook(record))
    (proposal,) = seen
    assert dict(proposal.proposed_binding_name_to_value) == {"result": "from the model"}
    assert proposal.proposed_step_outcome.kind == "pass"
    assert proposal.output_binding_names == ("result",)


def test_a_rewrite_commits_the_rewritten_value() -> None:
    rewrite = commit_hook(lambda p: nh.oversight.Rewrite(rewritten_binding_name_to_value={"result": "reviewed"}))
    _, committed, _ = run_block(_ASSIGN, oversight=rewrite)
    assert committed == "reviewed"


def test_a_rewritten_value_is_validated_against_the_binding_type() -> None:
    rewrite = commit_hook(lambda p: nh.oversight.Rewrite(rewritten_binding_name_to_value={"result": ["not", "a", "str"]}))
    with pytest.raises(nh.ToolValidationError, match="rewrote 'result' to a value that does not fit"):
        run_block(_ASSIGN, oversight=rewrite)


def test_a_rewrite_of_a_name_that_is_not_a_write_binding_fails() -> None:
    rewrite = commit_hook(lambda p: nh.oversight.Rewrite(rewritten_binding_name_to_value={"ran": []}))
    with pytest.raises(nh.NighthawkError, match=r"rewrote 'ran', which is not a write binding .* \(its write bindings: result\)"):
        run_block(_ASSIGN, oversight=rewrite)


def test_an_async_commit_hook_can_rewrite() -> None:
    async def later(proposal: Any) -> Any:
        await asyncio.sleep(0)
        return nh.oversight.Rewrite(rewritten_binding_name_to_value={"result": "async review"})

    _, committed, _ = run_block(_ASSIGN, oversight=commit_hook(later))
    assert committed == "async review"


def test_an_async_commit_hook_can_reject() -> None:
    async def later(proposal: Any) -> Any:
        return nh.oversight.Reject("async no")

    with pytest.raises(nh.oversight.OversightRejectedError, match="async no"):
        run_block(_ASSIGN, oversight=commit_hook(later))


def test_a_raise_outcome_is_not_shown_to_the_commit_hook() -> None:
    seen: list[Any] = []
    executor, _ = scripted_executor([finish("raise", raise_message="bad input", raise_error_type="ValueError")])

    @nh.natural_function
    def block() -> None:
        """natural
        Check it.
        """

    with nh.run(executor), nh.scope(oversight=commit_hook(lambda p: seen.append(p) or nh.oversight.Accept())):
        with pytest.raises(ValueError, match="bad input"):
            block()
    assert seen == []


# --- scopes ---------------------------------------------------------------------------------------------


def _refusing(reason: str) -> Any:
    return tool_hook(lambda call: nh.oversight.Reject(reason))


def _first_error(executor_script: Any) -> str | None:
    envelope = json.loads(executor_script.last_tool_results()[0])
    return None if envelope["error"] is None else envelope["error"]["message"]


def _run_in(*scopes: Any) -> str | None:
    """Run one `nh_eval` block inside the nested scopes given (`...` = a scope that leaves oversight out)."""
    executor, script = scripted_executor([call("nh_eval", expression="1")], [finish()])

    @nh.natural_function
    def block() -> None:
        """natural
        Look.
        """

    from contextlib import ExitStack

    with nh.run(executor), ExitStack() as stack:
        for oversight in scopes:
            stack.enter_context(nh.scope() if oversight is ... else nh.scope(oversight=oversight))
        block()
    return _first_error(script)


def test_a_nested_scope_inherits_the_hooks() -> None:
    assert _run_in(_refusing("outer"), ...) == "outer"


def test_a_nested_scope_with_oversight_none_clears_the_hooks() -> None:
    assert _run_in(_refusing("outer"), None) is None


def test_a_nested_scope_with_its_own_oversight_replaces_the_outer_one() -> None:
    accept = tool_hook(lambda call: nh.oversight.Accept())
    assert _run_in(_refusing("outer"), accept) is None


def test_hooks_end_with_their_scope() -> None:
    executor, script = scripted_executor([call("nh_eval", expression="1")], [finish()])

    @nh.natural_function
    def block() -> None:
        """natural
        Look.
        """

    with nh.run(executor):
        with nh.scope(oversight=_refusing("inside")):
            pass
        block()
    assert _first_error(script) is None


def test_a_process_oversight_is_asked_after_the_scope_and_survives_oversight_none() -> None:
    process = _refusing("process-wide")
    nh.oversight.add_process_oversight(process)
    try:
        assert _run_in(None) == "process-wide"
    finally:
        nh.oversight.remove_process_oversight(process)


def test_combine_asks_each_oversight_and_the_first_rejection_wins() -> None:
    asked: list[str] = []

    def accept(call: Any) -> Any:
        asked.append("first")
        return nh.oversight.Accept()

    combined = nh.oversight.combine(tool_hook(accept), _refusing("second"), _refusing("third"))
    assert _run_in(combined) == "second"
    assert asked == ["first"]


# --- events and spans -----------------------------------------------------------------------------------


def _decisions(oversight: Any, *tool_calls: Any) -> list[events.OversightDecision]:
    seen: list[events.Event] = []
    with events.listen(seen.append):
        try:
            run_block(*tool_calls, oversight=oversight)
        except nh.NighthawkError:
            pass
    return [event for event in seen if isinstance(event, events.OversightDecision)]


def test_an_accepted_tool_call_is_recorded_with_its_hook() -> None:
    def my_hook(call: Any) -> Any:
        return nh.oversight.Accept()

    (decision,) = _decisions(tool_hook(my_hook), _tool_call("nh_eval"))
    assert (decision.hook, decision.oversight, decision.decision, decision.tool_name) == (
        "inspect_tool_call",
        "test_an_accepted_tool_call_is_recorded_with_its_hook.<locals>.my_hook",
        "accepted",
        "nh_eval",
    )


def test_a_rejected_tool_call_is_recorded_with_its_reason() -> None:
    (decision,) = _decisions(nh.oversight.read_only(), call("nh_eval", expression="os.remove('x')"))
    assert (decision.oversight, decision.decision) == ("read_only", "rejected")
    assert "deny list" in (decision.reason or "")


def test_a_rewritten_commit_is_recorded_with_the_names() -> None:
    rewrite = nh.oversight.Oversight(
        inspect_step_commit=lambda p: nh.oversight.Rewrite(rewritten_binding_name_to_value={"result": "r"}, reason="house style"),
        name="review",
    )
    (decision,) = _decisions(rewrite, _ASSIGN)
    assert (decision.hook, decision.oversight, decision.decision, decision.names, decision.reason) == (
        "inspect_step_commit",
        "review",
        "rewritten",
        ("result",),
        "house style",
    )


def test_a_rejected_commit_is_recorded() -> None:
    (decision,) = _decisions(commit_hook(lambda p: nh.oversight.Reject("no")), _ASSIGN)
    assert (decision.hook, decision.decision, decision.reason) == ("inspect_step_commit", "rejected", "no")


def test_a_decision_is_an_event_on_the_step_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with events.listen(telemetry.OpenTelemetryListener(tracer_provider=provider)):
        run_block(_tool_call("nh_eval"), oversight=nh.oversight.allow_tools("nh_assign"))
    (step,) = [span for span in exporter.get_finished_spans() if span.name == "nighthawk.step"]
    (event,) = [event for event in step.events if event.name == "nighthawk.oversight.decision"]
    assert dict(event.attributes or {}) == {
        "nighthawk.oversight.hook": "inspect_tool_call",
        "nighthawk.oversight.name": "allow_tools",
        "nighthawk.oversight.verdict": "rejected",
        "nighthawk.oversight.reason": "the tool 'nh_eval' is not allowed here; use only nh_assign",
        "nighthawk.oversight.tool_name": "nh_eval",
    }
