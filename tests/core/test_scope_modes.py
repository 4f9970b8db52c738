"""`nh.scope(mode=..., implicit_references=..., *_prompt_suffix_fragments=...)`: how scopes combine, what
the getters read back, and what a step offers the model (code written for nighthawk-python 0.11)."""

from __future__ import annotations

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor


@nh.natural_function
def noop() -> None:
    """natural
    Nothing to do.
    """


@nh.natural_function
def triage(ticket: str) -> str:
    label = ""
    """natural
    Read <ticket> and set <:label>.
    """
    return label


def prompts(script) -> tuple[str, str]:
    request = script.seen[-1][0]
    return request.instructions, str(request.parts[-1].content)


def known_labels() -> list[str]:
    """The labels a ticket may get."""
    return ["bug", "question"]


def search_repository(query: str) -> list[str]:
    return [f"hit for {query}"]


# Merge rules ---------------------------------------------------------------------------------------------


def test_inherit_appends_fragments_given_as_lists_after_the_enclosing_ones() -> None:
    with nh.run(object()), nh.scope(system_prompt_suffix_fragments=["parent"]):
        with nh.scope(system_prompt_suffix_fragments=["child 1", "child 2"], user_prompt_suffix_fragments=["u"]):
            assert nh.get_system_prompt_suffix_fragments() == ("parent", "child 1", "child 2")
            assert nh.get_user_prompt_suffix_fragments() == ("u",)
        assert nh.get_system_prompt_suffix_fragments() == ("parent",)


def test_the_singular_and_plural_fragment_spellings_can_be_given_together() -> None:
    with nh.run(object()), nh.scope(system_prompt_suffix_fragment="one", system_prompt_suffix_fragments=["two"]):
        assert nh.get_system_prompt_suffix_fragments() == ("one", "two")


def test_replace_with_a_list_replaces_the_enclosing_fragments() -> None:
    with nh.run(object()), nh.scope(system_prompt_suffix_fragments=["parent"]):
        with nh.scope(mode="replace", system_prompt_suffix_fragments=["child"]):
            assert nh.get_system_prompt_suffix_fragments() == ("child",)


def test_replace_with_an_empty_list_clears_and_with_none_keeps() -> None:
    with nh.run(object()), nh.scope(user_prompt_suffix_fragments=["parent"]):
        with nh.scope(mode="replace", user_prompt_suffix_fragments=[]):
            assert nh.get_user_prompt_suffix_fragments() == ()
        with nh.scope(mode="replace", user_prompt_suffix_fragments=None):
            assert nh.get_user_prompt_suffix_fragments() == ("parent",)


def test_inherit_adds_implicit_references_to_the_enclosing_ones() -> None:
    with nh.run(object()), nh.scope(implicit_references={"search_repository": search_repository}):
        with nh.scope(implicit_references={"known_labels": known_labels}):
            assert nh.get_implicit_references() == {
                "search_repository": search_repository,
                "known_labels": known_labels,
            }
        assert nh.get_implicit_references() == {"search_repository": search_repository}


def test_inherit_accepts_the_same_object_again_under_the_same_name() -> None:
    with nh.run(object()), nh.scope(implicit_references={"search": search_repository}):
        with nh.scope(implicit_references={"search": search_repository}):
            assert nh.get_implicit_references() == {"search": search_repository}


def test_inherit_refuses_another_value_under_a_name_already_set() -> None:
    with nh.run(object()), nh.scope(implicit_references={"search": search_repository}):
        with pytest.raises(nh.NighthawkError, match="implicit reference 'search' is already set"):
            with nh.scope(implicit_references={"search": known_labels}):
                pass
        assert nh.get_implicit_references() == {"search": search_repository}


def test_replace_with_a_mapping_replaces_and_an_empty_one_clears() -> None:
    with nh.run(object()), nh.scope(implicit_references={"search": search_repository}):
        with nh.scope(mode="replace", implicit_references={"labels": known_labels}):
            assert nh.get_implicit_references() == {"labels": known_labels}
        with nh.scope(mode="replace", implicit_references={}):
            assert nh.get_implicit_references() == {}
        with nh.scope(mode="replace"):
            assert nh.get_implicit_references() == {"search": search_repository}


def test_narrowing_by_reading_the_getter_and_replacing() -> None:
    with nh.run(object()), nh.scope(implicit_references={"a": search_repository, "b": known_labels}):
        narrowed = {name: value for name, value in nh.get_implicit_references().items() if name != "b"}
        with nh.scope(mode="replace", implicit_references=narrowed):
            assert nh.get_implicit_references() == {"a": search_repository}


def test_the_getter_returns_a_copy_that_cannot_change_the_scope() -> None:
    with nh.run(object()), nh.scope(implicit_references={"a": search_repository}):
        nh.get_implicit_references()["b"] = known_labels
        assert nh.get_implicit_references() == {"a": search_repository}


def test_getters_outside_a_run_raise() -> None:
    for getter in (nh.get_implicit_references, nh.get_system_prompt_suffix_fragments, nh.get_user_prompt_suffix_fragments):
        with pytest.raises(nh.NighthawkError, match="only available inside"):
            getter()


def test_an_unknown_mode_is_refused() -> None:
    with nh.run(object()), pytest.raises(ValueError, match="`mode` must be 'inherit' or 'replace'"):
        with nh.scope(mode="merge"):  # type: ignore[arg-type]
            pass


def test_a_lone_string_for_a_fragment_list_is_refused_not_split() -> None:
    with nh.run(object()), pytest.raises(ValueError, match="lone string 'Be brief.'"):
        with nh.scope(system_prompt_suffix_fragments="Be brief."):  # type: ignore[arg-type]
            pass


def test_an_implicit_reference_name_must_be_an_identifier() -> None:
    with nh.run(object()), pytest.raises(ValueError, match="must be Python identifiers"):
        with nh.scope(implicit_references={"not a name": len}):
            pass


# What the step sends --------------------------------------------------------------------------------------


def test_scope_fragments_follow_the_configuration_baseline_fragments() -> None:
    executor, script = scripted_executor([finish()], system_prompt_suffix_fragments=("baseline",))
    with nh.run(executor), nh.scope(system_prompt_suffix_fragments=["scoped"]):
        assert nh.get_system_prompt_suffix_fragments() == ("scoped",)
        noop()
    system, _ = prompts(script)
    assert system.endswith("\n\nbaseline\n\nscoped")


def test_replace_clears_scope_fragments_but_not_the_configuration_baseline() -> None:
    executor, script = scripted_executor([finish()], user_prompt_suffix_fragments=("baseline",))
    with nh.run(executor), nh.scope(user_prompt_suffix_fragments=["parent"]):
        with nh.scope(mode="replace", user_prompt_suffix_fragments=[]):
            noop()
    _, user = prompts(script)
    assert user.endswith("<<<NH:END_LOCALS>>>\n\nbaseline")


def test_implicit_references_are_listed_with_the_globals_in_the_prompt() -> None:
    executor, script = scripted_executor([finish()])
    with nh.run(executor), nh.scope(implicit_references={"known_labels": known_labels}):
        triage("it crashes")
    _, user = prompts(script)
    globals_section = user.split("<<<NH:GLOBALS>>>")[1]
    assert "known_labels" in globals_section
    assert "The labels a ticket may get." in globals_section


def test_the_model_can_call_an_implicit_reference_in_an_expression() -> None:
    executor, _ = scripted_executor(
        [call("nh_assign", target_path="label", expression="search_repository('crash')[0]")],
        [finish()],
    )
    with nh.run(executor), nh.scope(implicit_references={"search_repository": search_repository}):
        assert triage("it crashes") == "hit for crash"


def test_an_implicit_reference_is_not_left_in_the_module_globals() -> None:
    executor, _ = scripted_executor([finish()])
    with nh.run(executor), nh.scope(implicit_references={"scoped_helper_xyz": known_labels}):
        triage("it crashes")
    assert "scoped_helper_xyz" not in globals()


def test_a_cleared_implicit_reference_is_unknown_to_the_model() -> None:
    executor, script = scripted_executor(
        [call("nh_eval", expression="lookup('x')")],
        [finish()],
    )
    with nh.run(executor), nh.scope(implicit_references={"lookup": search_repository}):
        with nh.scope(mode="replace", implicit_references={}):
            triage("it crashes")
    assert "NameError" in script.last_tool_results()[0]


def test_a_step_without_implicit_references_sends_the_same_request_as_one_outside_any_scope() -> None:
    plain_executor, plain = scripted_executor([finish()])
    with nh.run(plain_executor):
        triage("it crashes")
    scoped_executor, scoped = scripted_executor([finish()])
    with nh.run(scoped_executor), nh.scope(mode="replace", implicit_references={}):
        triage("it crashes")
    assert prompts(plain) == prompts(scoped)


# Object methods in the summaries (StepContextLimits.object_max_methods) ------------------------------------


class Ticket:
    def __init__(self, text: str) -> None:
        self.text = text

    def words(self) -> list[str]:
        """The ticket's words."""
        return self.text.split()

    def mentions(self, name: str, *, exact: bool = False) -> bool:
        return name in self.text

    def _private(self) -> None: ...


@nh.natural_function
def read_ticket(ticket: Ticket) -> None:
    """natural
    Read <ticket>.
    """


def test_an_objects_methods_are_not_listed_by_default() -> None:
    executor, script = scripted_executor([finish()])
    with nh.run(executor):
        read_ticket(Ticket("it crashes"))
    assert "ticket.words" not in prompts(script)[1]


def test_object_max_methods_lists_that_many_public_methods_with_signatures() -> None:
    limits = nh.StepContextLimits(object_max_methods=1)
    executor, script = scripted_executor([finish()], context_limits=limits)
    with nh.run(executor):
        read_ticket(Ticket("it crashes"))
    user = prompts(script)[1]
    assert "ticket.mentions: (name: str, *, exact: bool = False) -> bool" in user
    assert "ticket: 1 more methods not listed" in user
    assert "_private" not in user


def test_object_max_methods_refuses_a_negative_number() -> None:
    with pytest.raises(ValueError, match="`StepContextLimits.object_max_methods` must be a whole number of at least 0"):
        nh.StepContextLimits(object_max_methods=-1)
