"""The cost a step display shows when some of an unpriced model's requests failed (not billed)."""

from __future__ import annotations

from kernel_scripts import step_events

from nighthawk import events
from nighthawk.budget import UsageTotals
from nighthawk_ipython import StepView
from nighthawk_ipython._text import cost_text


def _step(*usages: events.UsageReported) -> StepView:
    started, prompt, call_started, call_finished, reached, _usage, *rest = step_events()
    view = StepView(started)
    for event in (prompt, call_started, call_finished, reached, *usages, *rest):
        view.apply(event)
    return view


def _unpriced(requests: int, failed: int) -> events.UsageReported:
    return events.UsageReported(invocation_id="step-1", requests=requests, failed_requests=failed, input_tokens=100,
                                output_tokens=20, model="test:scripted", cost_usd=None)


def test_an_unpriced_model_with_a_failed_request_shows_unpriced_not_a_zero_lower_bound() -> None:
    view = _step(_unpriced(requests=3, failed=1))
    header = view.text().splitlines()[0]
    assert header.endswith("3 requests · 100 in / 20 out tokens · unpriced"), header
    assert "≥" not in view.html() and "· unpriced" in view.html()


def test_an_unpriced_model_whose_every_request_failed_cost_nothing() -> None:
    header = _step(_unpriced(requests=2, failed=2)).text().splitlines()[0]
    assert header.endswith("· $0.0000"), header


def test_a_priced_model_with_an_unpriced_one_shows_a_lower_bound_counting_only_answered_requests() -> None:
    totals = UsageTotals()
    totals.add(events.UsageReported(invocation_id="a", requests=1, input_tokens=10, output_tokens=5, cost_usd=0.0125))
    totals.add(_unpriced(requests=3, failed=1))
    assert cost_text(totals) == "≥ $0.0125 (2 unpriced requests)"
