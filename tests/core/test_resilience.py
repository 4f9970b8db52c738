"""`nighthawk.resilience`: function transformers that keep the wrapped signature, work sync and async, and
cooperate with natural functions, budget groups, `nh.map` and interrupts."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
import threading
import time

import pytest
from pydantic_ai.usage import RunUsage

import nighthawk as nh
from nighthawk.resilience import (
    BudgetExceededError,
    CircuitOpenError,
    CircuitState,
    budget,
    circuit_breaker,
    fallback,
    plurality,
    retrying,
    timeout,
    vote,
)
from scripting import call, finish, scripted_executor


def failing_then(results: list[object]):
    """A function that returns or raises each of `results` in turn (an exception instance is raised)."""
    calls: list[int] = []

    def classify(text: str, *, strict: bool = False) -> object:
        """Classify a text."""
        calls.append(1)
        result = results[len(calls) - 1]
        if isinstance(result, BaseException):
            raise result
        return result

    classify.calls = calls  # type: ignore[attr-defined]
    return classify


def no_wait(_state: object) -> float:
    return 0.0


# Import and shape -----------------------------------------------------------------------------------------


def test_import_nighthawk_does_not_import_resilience() -> None:
    code = "import sys, nighthawk as nh; assert 'nighthawk.resilience' not in sys.modules; nh.resilience.vote; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize(
    "transformer",
    [
        retrying(attempts=2),
        fallback,
        vote(count=3),
        timeout(seconds=5),
        budget(tokens=100),
        circuit_breaker(fail_threshold=2),
    ],
    ids=["retrying", "fallback", "vote", "timeout", "budget", "circuit_breaker"],
)
def test_every_transformer_keeps_the_signature_name_and_doc(transformer) -> None:
    def classify(text: str, *, strict: bool = False) -> str:
        """Classify a text."""
        return text

    wrapped = transformer(classify)
    assert inspect.signature(wrapped) == inspect.signature(classify)
    assert (wrapped.__name__, wrapped.__doc__) == ("classify", "Classify a text.")
    assert wrapped("x", strict=True) == "x"


@pytest.mark.parametrize(
    "transformer",
    [retrying(attempts=2), fallback, vote(count=3), timeout(seconds=5), budget(tokens=100), circuit_breaker(fail_threshold=2)],
    ids=["retrying", "fallback", "vote", "timeout", "budget", "circuit_breaker"],
)
def test_every_transformer_keeps_an_async_function_async(transformer) -> None:
    async def classify(text: str) -> str:
        return text.upper()

    wrapped = transformer(classify)
    assert inspect.iscoroutinefunction(wrapped) or inspect.iscoroutinefunction(wrapped.__call__)
    assert asyncio.run(wrapped("x")) == "X"


# retrying -------------------------------------------------------------------------------------------------


def test_retrying_calls_again_after_an_execution_error() -> None:
    classify = failing_then([nh.ExecutionError("flaky"), "bug"])
    assert retrying(attempts=3, wait=no_wait)(classify)("text") == "bug"
    assert len(classify.calls) == 2


def test_retrying_raises_the_last_error_when_attempts_run_out() -> None:
    classify = failing_then([nh.ExecutionError("first"), nh.ExecutionError("second")])
    with pytest.raises(nh.ExecutionError, match="second"):
        retrying(attempts=2, wait=no_wait)(classify)("text")


def test_retrying_lets_an_error_outside_on_through_at_once() -> None:
    classify = failing_then([ValueError("a bug in my code"), "bug"])
    with pytest.raises(ValueError):
        retrying(attempts=3, wait=no_wait)(classify)("text")
    assert len(classify.calls) == 1


def test_retrying_asks_retry_if_and_tells_on_retry() -> None:
    told: list[int] = []
    classify = failing_then([nh.ExecutionError("transient"), nh.ExecutionError("fatal"), "bug"])
    wrapped = retrying(
        attempts=3,
        wait=no_wait,
        retry_if=lambda error: "transient" in str(error),
        on_retry=lambda state: told.append(state.attempt_number),
    )(classify)
    with pytest.raises(nh.ExecutionError, match="fatal"):
        wrapped("text")
    assert told == [1]


def test_retrying_does_not_retry_a_spent_budget_unless_asked() -> None:
    spent = nh.BudgetExceededError(level="cell", budget="requests", limit=1, reached=1)
    classify = failing_then([spent, "bug"])
    with pytest.raises(nh.BudgetExceededError):
        retrying(attempts=3, wait=no_wait)(classify)("text")
    assert len(classify.calls) == 1


def test_retrying_as_a_for_loop() -> None:
    tries: list[int] = []
    for attempt in retrying(attempts=3, wait=no_wait):
        with attempt:
            tries.append(1)
            if len(tries) < 3:
                raise nh.ExecutionError("not yet")
    assert len(tries) == 3


def test_retrying_as_an_async_for_loop_raises_when_exhausted() -> None:
    async def main() -> None:
        async for attempt in retrying(attempts=2, wait=no_wait):
            with attempt:
                raise nh.ExecutionError("always")

    with pytest.raises(nh.ExecutionError, match="always"):
        asyncio.run(main())


def test_retrying_a_natural_function_runs_its_step_again() -> None:
    executor, script = scripted_executor(
        [finish("raise", raise_message="model hiccup")],
        [finish("return", return_expression="'bug'")],
    )

    @retrying(attempts=2, wait=no_wait)
    @nh.natural_function
    def label(ticket: str) -> str:
        """natural
        Return the label of <ticket>.
        """

    with nh.run(executor):
        assert label("it crashes") == "bug"
    assert script.requests == 2


# fallback -------------------------------------------------------------------------------------------------


def test_fallback_returns_the_first_success() -> None:
    broken = failing_then([nh.ExecutionError("down")])
    assert fallback(broken, lambda text, strict=False: "from backup")("text") == "from backup"


def test_fallback_returns_the_default_when_all_fail_and_raises_without_one() -> None:
    assert fallback(failing_then([ValueError("a")]), default="unknown")("text") == "unknown"
    with pytest.raises(ValueError, match="b"):
        fallback(failing_then([ValueError("a")]), failing_then([ValueError("b")]))("text")


def test_fallback_only_moves_on_for_the_errors_in_on() -> None:
    backup = failing_then(["backup"])
    with pytest.raises(KeyError):
        fallback(failing_then([KeyError("x")]), backup, on=(nh.ExecutionError,))("text")
    assert backup.calls == []


def test_fallback_mixes_sync_and_async_functions() -> None:
    async def backup(text: str) -> str:
        return "async backup"

    assert asyncio.run(fallback(failing_then([ValueError("a")]), backup)("text")) == "async backup"


# vote -----------------------------------------------------------------------------------------------------


def test_plurality_picks_the_most_common_value_even_unhashable() -> None:
    assert plurality(["a", "b", "a"]) == "a"
    assert plurality([{"k": 1}, {"k": 2}, {"k": 1}]) == {"k": 1}
    with pytest.raises(ValueError, match="requires at least one result"):
        plurality([])


def test_vote_returns_the_majority_answer() -> None:
    classify = failing_then(["bug", "question", "bug"])
    assert vote(count=3)(classify)("text") == "bug"
    assert len(classify.calls) == 3


def test_vote_tolerates_failures_down_to_min_success() -> None:
    assert vote(count=3)(failing_then(["bug", ValueError("x"), "bug"]))("text") == "bug"
    with pytest.raises(ValueError, match="second"):
        vote(count=3)(failing_then([ValueError("first"), ValueError("second"), "bug"]))("text")
    assert vote(count=3, min_success=1)(failing_then([ValueError("a"), ValueError("b"), "bug"]))("text") == "bug"


def test_vote_uses_the_given_decide_function() -> None:
    assert vote(count=3, decide=max)(failing_then([1, 3, 2]))("text") == 3


def test_vote_refuses_a_count_below_one() -> None:
    with pytest.raises(ValueError, match="must be at least 1"):
        vote(count=0)


def test_vote_awaits_async_calls_together() -> None:
    running: list[int] = []
    peak: list[int] = []

    async def classify(text: str) -> str:
        running.append(1)
        peak.append(len(running))
        await asyncio.sleep(0.01)
        running.pop()
        return "bug"

    assert asyncio.run(vote(count=3)(classify)("text")) == "bug"
    assert max(peak) == 3


def test_vote_over_a_natural_function_asks_the_model_count_times() -> None:
    executor, script = scripted_executor(
        [finish("return", return_expression="'bug'")],
        [finish("return", return_expression="'question'")],
        [finish("return", return_expression="'bug'")],
    )

    @nh.natural_function
    def label(ticket: str) -> str:
        """natural
        Return the label of <ticket>.
        """

    with nh.run(executor):
        assert vote(count=3)(label)("it crashes") == "bug"
    assert script.requests == 3


def test_vote_inside_map_runs_every_call_on_the_callers_thread() -> None:
    threads: set[int] = set()

    def classify(number: int) -> str:
        threads.add(threading.get_ident())
        return "even" if number % 2 == 0 else "odd"

    result = nh.map(vote(count=3)(classify), [1, 2, 3], progress=False)
    assert list(result) == ["odd", "even", "odd"]
    assert threads == {threading.get_ident()}


def test_an_interrupt_stops_a_vote_at_once() -> None:
    classify = failing_then(["bug", KeyboardInterrupt(), "bug"])
    with pytest.raises(KeyboardInterrupt):
        vote(count=3)(classify)("text")
    assert len(classify.calls) == 2


def test_an_aborted_step_is_not_retried_nor_fallen_back_from() -> None:
    aborted = nh.StepAbortedError("user code was stopped")
    first, backup = failing_then([aborted, "bug"]), failing_then(["backup"])
    with pytest.raises(nh.StepAbortedError):
        fallback(retrying(attempts=3, on=Exception, wait=no_wait)(first), backup)("text")
    assert (len(first.calls), backup.calls) == (1, [])


# timeout --------------------------------------------------------------------------------------------------


def test_timeout_raises_for_a_slow_sync_call_and_passes_a_quick_one() -> None:
    release = threading.Event()

    def slow(text: str) -> str:
        release.wait(5)
        return text

    try:
        with pytest.raises(TimeoutError):
            timeout(seconds=0.05)(slow)("x")
    finally:
        release.set()
    assert timeout(seconds=5)(str.upper)("x") == "X"


def test_timeout_cancels_a_slow_async_call() -> None:
    cancelled: list[bool] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    with pytest.raises(TimeoutError):
        asyncio.run(timeout(seconds=0.05)(slow)())
    assert cancelled == [True]


def test_timeout_as_an_async_context_manager() -> None:
    async def main() -> None:
        async with timeout(seconds=0.05):
            await asyncio.sleep(5)

    with pytest.raises(TimeoutError):
        asyncio.run(main())


def test_a_sync_call_under_timeout_still_runs_in_the_callers_run() -> None:
    with nh.run(object(), run_id="run-t"):
        assert timeout(seconds=5)(lambda: nh.get_execution_ref().run_id)() == "run-t"


# budget ---------------------------------------------------------------------------------------------------


def spending(input_tokens: int, output_tokens: int):
    def call_model(text: str) -> str:
        meter = nh.get_current_usage_meter()
        if meter is not None:
            meter.record(RunUsage(input_tokens=input_tokens, output_tokens=output_tokens))
        return text

    return call_model


def test_budget_needs_a_limit_and_a_cost_function_for_money() -> None:
    with pytest.raises(ValueError, match="requires at least one"):
        budget()
    with pytest.raises(ValueError, match="cost_function"):
        budget(cost=1.0)


def test_budget_refuses_a_call_once_the_run_has_spent_its_tokens() -> None:
    called = failing_then(["never"])
    with nh.run(object()):
        nh.get_current_usage_meter().record(RunUsage(input_tokens=30, output_tokens=20))  # type: ignore[union-attr]
        with pytest.raises(BudgetExceededError) as caught:
            budget(tokens=50)(called)("x")
    assert (caught.value.limit_kind, caught.value.limit_value) == ("tokens", 50)
    assert called.calls == []


def test_budget_raises_after_a_call_that_spent_more_than_its_share() -> None:
    with nh.run(object()), pytest.raises(BudgetExceededError, match="tokens_per_call limit 30") as caught:
        budget(tokens_per_call=30)(spending(25, 25))("x")
    assert caught.value.call_usage.total_tokens == 50


def test_budget_prices_usage_with_the_cost_function() -> None:
    def dollars(usage: RunUsage) -> float:
        return usage.total_tokens * 0.01

    with nh.run(object()), pytest.raises(BudgetExceededError) as caught:
        budget(cost=0.5, cost_function=dollars)(spending(50, 10))("x")
    assert caught.value.limit_kind == "cost"


def test_budget_refuses_beforehand_when_the_estimate_would_pass_the_limit() -> None:
    called = failing_then(["never"])
    with nh.run(object()), pytest.raises(BudgetExceededError):
        budget(tokens=100, estimate_usage=lambda text: RunUsage(input_tokens=80, output_tokens=40))(called)("x")
    assert called.calls == []


def test_a_budget_error_is_a_nighthawk_budget_error() -> None:
    with nh.run(object()), pytest.raises(nh.BudgetExceededError):
        budget(tokens_per_call=1)(spending(5, 5))("x")


def test_budget_counts_the_steps_of_a_natural_function_as_budget_groups_do() -> None:
    executor, _ = scripted_executor([finish()], [finish()])

    @nh.natural_function
    def look(ticket: str) -> None:
        """natural
        Look at <ticket>.
        """

    with nh.run(executor), nh.budget() as group:
        look("first")  # the group has now counted one step
        per_step = group.spent.total_tokens
        with pytest.raises(BudgetExceededError) as caught:
            budget(tokens_per_call=per_step - 1)(look)("second")
    assert caught.value.call_usage.total_tokens == per_step
    assert group.spent.total_tokens == 2 * per_step


def test_budget_outside_a_run_enforces_only_per_call_limits() -> None:
    assert budget(tokens=1)(spending(100, 100))("x") == "x"


# circuit_breaker ------------------------------------------------------------------------------------------


def test_circuit_opens_after_the_threshold_and_refuses_without_calling() -> None:
    service = failing_then([ConnectionError("down")] * 2 + ["up"])
    protected = circuit_breaker(fail_threshold=2, reset_timeout=60)(service)
    for _ in range(2):
        with pytest.raises(ConnectionError):
            protected("x")
    assert protected.state is CircuitState.OPEN
    with pytest.raises(CircuitOpenError) as caught:
        protected("x")
    assert caught.value.time_remaining > 0
    assert len(service.calls) == 2


def test_circuit_lets_one_probe_through_after_the_reset_timeout() -> None:
    service = failing_then([ConnectionError("down"), "up", "up"])
    protected = circuit_breaker(fail_threshold=1, reset_timeout=0.05)(service)
    with pytest.raises(ConnectionError):
        protected("x")
    time.sleep(0.06)
    assert protected.state is CircuitState.HALF_OPEN
    assert protected("x") == "up"
    assert protected.state is CircuitState.CLOSED


def test_a_failed_probe_opens_the_circuit_again() -> None:
    protected = circuit_breaker(fail_threshold=1, reset_timeout=0.05)(failing_then([ValueError("a"), ValueError("b")]))
    with pytest.raises(ValueError):
        protected("x")
    time.sleep(0.06)
    with pytest.raises(ValueError):
        protected("x")
    assert protected.state is CircuitState.OPEN


def test_errors_outside_on_do_not_count_and_reset_closes() -> None:
    protected = circuit_breaker(fail_threshold=1, on=ConnectionError)(failing_then([KeyError("x"), ConnectionError("y")]))
    with pytest.raises(KeyError):
        protected("x")
    assert protected.state is CircuitState.CLOSED
    with pytest.raises(ConnectionError):
        protected("x")
    protected.reset()
    assert protected.state is CircuitState.CLOSED


def test_each_circuit_breaker_keeps_its_own_state() -> None:
    breaker = circuit_breaker(fail_threshold=1)
    first, second = breaker(failing_then([ValueError("a")])), breaker(failing_then(["ok"]))
    with pytest.raises(ValueError):
        first("x")
    assert (first.state, second.state) == (CircuitState.OPEN, CircuitState.CLOSED)


def test_an_async_circuit_refuses_when_open() -> None:
    async def service() -> str:
        raise ConnectionError("down")

    protected = circuit_breaker(fail_threshold=1)(service)
    with pytest.raises(ConnectionError):
        asyncio.run(protected())
    with pytest.raises(CircuitOpenError):
        asyncio.run(protected())


# composition ----------------------------------------------------------------------------------------------


def test_composed_in_the_documented_order() -> None:
    primary = failing_then([nh.ExecutionError("down")] * 6)
    robust = fallback(
        circuit_breaker(fail_threshold=10)(retrying(attempts=2, wait=no_wait)(vote(count=3)(timeout(seconds=5)(primary)))),
        lambda text, strict=False: "backup",
    )
    assert robust("text") == "backup"
    assert len(primary.calls) == 6  # two attempts of a three-call vote
