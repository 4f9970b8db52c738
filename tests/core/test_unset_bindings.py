"""Write bindings a `pass` leaves unset: one reminder, then the step stands and says what stayed unset."""

from __future__ import annotations

import nighthawk as nh
from nighthawk import events
from scripting import call, finish, scripted_executor


def assign(target: str, expression: str) -> object:
    return call("nh_assign", target_path=target, expression=expression)


@nh.natural_function
def classify(text: str) -> dict[str, object]:
    """natural
    Classify <text> into <:label> and <:score>.
    """
    return {name: value for name, value in locals().items() if name in ("label", "score")}


def test_pass_leaving_a_write_binding_unset_gets_one_reminder_naming_it() -> None:
    executor, script = scripted_executor([assign("label", "'spam'"), finish()], [assign("score", "0.9"), finish()])
    with nh.run(executor):
        assert classify("buy now") == {"label": "spam", "score": 0.9}
    reminder = str(script.seen[1][-1].parts)
    assert "You passed without setting <:score>" in reminder
    assert "<:label>" not in reminder


def test_second_pass_leaving_it_unset_succeeds_and_reports_the_unset_binding() -> None:
    executor, script = scripted_executor([assign("label", "'spam'"), finish()], [finish()])
    seen: list[events.Event] = []
    with nh.run(executor), events.listen(seen.append):
        assert classify("buy now") == {"label": "spam"}
    assert script.requests == 2
    (committed,) = [event for event in seen if isinstance(event, events.Committed)]
    assert committed.unset == ("score",)
    assert committed.names == ("label",)


def test_binding_bound_before_the_step_is_not_unset() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def keep() -> int:
        count = 3
        """natural
        Maybe change <:count>.
        """
        return count

    seen: list[events.Event] = []
    with nh.run(executor), events.listen(seen.append):
        assert keep() == 3
    assert script.requests == 1
    (committed,) = [event for event in seen if isinstance(event, events.Committed)]
    assert committed.unset == ()
