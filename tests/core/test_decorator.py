"""`@natural_function`: where blocks may appear and how their outcomes become Python control flow."""

from __future__ import annotations

import asyncio

import pytest

import nighthawk as nh
from scripting import call, finish, offered_kinds, offered_raise_types, scripted_executor

MODULE_CONSTANT = 40


def assign(target: str, expression: str):
    return call("nh_assign", target_path=target, expression=expression)


def test_docstring_block_writes_a_local_the_function_returns() -> None:
    executor, _ = scripted_executor([assign("result", "x * 2"), finish()])

    @nh.natural_function
    def double(x: int) -> int:
        """natural
        Set <:result> to twice <x>.
        """
        return result  # noqa: F821 - bound by the block's commit

    with nh.run(executor):
        assert double(21) == 42


def test_inline_block_in_parentheses_is_recognised() -> None:
    executor, script = scripted_executor([assign("y", "x + 1"), finish()])

    @nh.natural_function
    def inc(x: int) -> int:
        y = 0
        (
            """natural
            Set <:y> to <x> plus one.
            """
        )
        return y

    with nh.run(executor):
        assert inc(1) == 2
    assert script.requests == 1


def test_fstring_block_is_interpolated_at_call_time() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def greet(name: str) -> None:
        f"""natural
        Greet {name.upper()} politely; braces {{stay}}.
        """

    with nh.run(executor):
        greet("ada")
    prompt = str(script.seen[0][0].parts[-1].content)
    assert "Greet ADA politely; braces {stay}." in prompt


def test_docstring_is_never_interpolated() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def literal() -> None:
        """natural
        Keep {this} as written.
        """

    with nh.run(executor):
        literal()
    assert "Keep {this} as written." in str(script.seen[0][0].parts[-1].content)


def test_return_outcome_returns_from_the_function_with_validated_value() -> None:
    executor, _ = scripted_executor([finish("return", return_expression="'7'")])

    @nh.natural_function
    def seven() -> int:
        """natural
        Return seven.
        """
        raise AssertionError("the block returned; this line must not run")

    with nh.run(executor):
        assert seven() == 7  # coerced from '7' by the return annotation


def test_return_value_that_does_not_fit_the_annotation_is_an_execution_error() -> None:
    bad = finish("return", return_expression="'not a number'")
    executor, _ = scripted_executor([bad], [bad], [bad])

    @nh.natural_function
    def number() -> int:
        """natural
        Return a number.
        """

    with nh.run(executor), pytest.raises(nh.ExecutionError, match="did not end the step with a valid outcome"):
        number()


def test_break_and_continue_act_on_the_enclosing_loop() -> None:
    executor, _ = scripted_executor([finish("continue")], [finish("pass")], [finish("break")])

    @nh.natural_function
    def walk(items: list[int]) -> list[int]:
        seen = []
        for item in items:
            """natural
            Decide for <item>.
            """
            seen.append(item)
        return seen

    with nh.run(executor):
        assert walk([1, 2, 3, 4]) == [2]


def test_break_is_not_offered_outside_a_loop() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def flat() -> None:
        """natural
        Nothing to do.
        """

    with nh.run(executor):
        flat()
    assert offered_kinds(script.infos[0]) == ["pass", "return", "raise"]


def test_frontmatter_deny_narrows_the_outcome_tools() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def narrowed() -> None:
        """natural
        ---
        deny: [return, raise]
        ---
        Only pass.
        """

    with nh.run(executor):
        narrowed()
    assert offered_kinds(script.infos[0]) == ["pass"]


def test_raise_outcome_raises_the_named_exception_type() -> None:
    executor, _ = scripted_executor([finish("raise", raise_message="empty input", raise_error_type="ValueError")])

    @nh.natural_function
    def check(items: list[int]) -> None:
        """natural
        Fail if <items> is empty.
        """

    with nh.run(executor), pytest.raises(ValueError, match="empty input"):
        check([])


def test_raise_outcome_can_name_an_exception_class_in_scope() -> None:
    class QuotaExceeded(Exception):
        pass

    executor, script = scripted_executor([finish("raise", raise_message="over", raise_error_type="QuotaExceeded")])

    @nh.natural_function
    def spend(error_type: type) -> None:
        """natural
        Raise <error_type> if needed.
        """

    with nh.run(executor), pytest.raises(QuotaExceeded, match="over"):
        spend(QuotaExceeded)
    assert "QuotaExceeded" in offered_raise_types(script.infos[0])


def test_a_builtin_exception_the_program_names_can_be_raised() -> None:
    executor, script = scripted_executor([finish("raise", raise_message="the feed is late", raise_error_type="TimeoutError")])

    @nh.natural_function
    def fetch(feed: str) -> None:
        """natural
        Raise TimeoutError if <feed> says it is late.
        """

    with nh.run(executor), pytest.raises(TimeoutError, match="the feed is late"):
        fetch("late")
    assert "TimeoutError" in offered_raise_types(script.infos[0])


def test_builtin_exceptions_the_program_does_not_name_stay_out_of_the_schema() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def fetch(feed: str) -> None:
        """natural
        Check <feed>.
        """

    with nh.run(executor):
        fetch("late")
    offered = offered_raise_types(script.infos[0])
    assert "ValueError" in offered and not {"TimeoutError", "LookupError", "AttributeError"} & set(offered)


def test_read_binding_of_unknown_name_raises_name_error_before_the_model_runs() -> None:
    executor, script = scripted_executor()

    @nh.natural_function
    def broken() -> None:
        """natural
        Use <undefined_thing>.
        """

    with nh.run(executor), pytest.raises(NameError, match="undefined_thing"):
        broken()
    assert script.requests == 0


def test_read_binding_of_unassigned_local_raises_unbound_local_error() -> None:
    executor, _ = scripted_executor()

    @nh.natural_function
    def early() -> None:
        """natural
        Use <later>.
        """
        later = 1  # noqa: F841

    with nh.run(executor), pytest.raises(UnboundLocalError):
        early()


def test_unassigned_local_read_binding_error_names_the_variable_and_says_it_is_assigned_too_late() -> None:
    executor, script = scripted_executor()

    @nh.natural_function
    def uses_unbound(first: str) -> None:
        """natural
        Print <first> and <later>.
        """
        later = 1  # noqa: F841

    with nh.run(executor), pytest.raises(UnboundLocalError) as caught:
        uses_unbound("ready")
    assert caught.value.name == "later"
    assert "`<later>` in the Natural block names a variable not assigned yet" in str(caught.value)
    assert "escape" not in str(caught.value)
    assert script.requests == 0


def test_read_binding_resolves_globals_and_builtins() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def uses() -> None:
        """natural
        Combine <MODULE_CONSTANT> with <len>.
        """

    with nh.run(executor):
        uses()
    prompt = str(script.seen[0][0].parts[-1].content)
    assert "MODULE_CONSTANT: int = 40" in prompt


def test_read_binding_resolves_closure_variables() -> None:
    executor, script = scripted_executor([assign("out", "secret_sauce + 1"), finish()])
    secret_sauce = 41  # noqa: F841 - read by the block through `<secret_sauce>`

    @nh.natural_function
    def closure() -> int:
        """natural
        Set <:out> from <secret_sauce>.
        """
        return out  # noqa: F821

    with nh.run(executor):
        assert closure() == 42


def test_methods_static_and_class_methods_run_blocks() -> None:
    executor, _ = scripted_executor(
        [assign("r", "self.base + 1"), finish()],
        [assign("r", "cls.__name__"), finish()],
        [assign("r", "x * 3"), finish()],
    )

    class Thing:
        base = 10

        @nh.natural_function
        def method(self) -> int:
            """natural
            Set <:r> to base plus one.
            """
            return r  # noqa: F821

        @classmethod
        @nh.natural_function
        def name(cls) -> str:
            """natural
            Set <:r> to the class name.
            """
            return r  # noqa: F821

        @nh.natural_function
        @staticmethod
        def triple(x: int) -> int:
            """natural
            Set <:r> to three times <x>.
            """
            return r  # noqa: F821

    with nh.run(executor):
        assert Thing().method() == 11
        assert Thing.name() == "Thing"
        assert Thing.triple(2) == 6


def test_private_attribute_names_keep_their_mangling_in_methods() -> None:
    executor, _ = scripted_executor([finish()])

    class Account:
        def __init__(self) -> None:
            self.__balance = 5

        @nh.natural_function
        def balance(self) -> int:
            """natural
            Nothing to change.
            """
            return self.__balance

    with nh.run(executor):
        assert Account().balance() == 5


def test_async_natural_function_awaits_awaitable_return_expression() -> None:
    async def fetch() -> int:
        await asyncio.sleep(0)
        return 5

    executor, _ = scripted_executor([finish("return", return_expression="fetch()")])

    @nh.natural_function
    async def load() -> int:
        """natural
        Return what <fetch> gives.
        """

    async def main() -> int:
        with nh.run(executor):
            return await load()

    assert asyncio.run(main()) == 5


def test_sync_function_returning_an_awaitable_is_an_execution_error() -> None:
    async def fetch() -> int:
        return 5

    bad = finish("return", return_expression="fetch()")
    executor, _ = scripted_executor([bad], [bad], [bad])

    @nh.natural_function
    def load() -> int:
        """natural
        Return what <fetch> gives.
        """

    with nh.run(executor), pytest.raises(nh.ExecutionError, match="awaitable, but the function is not async"):
        load()


def test_nested_natural_function_sees_parent_step_locals() -> None:
    executor, script = scripted_executor(
        [call("nh_eval", expression="inner()")],  # outer step calls the inner natural function
        [finish()],  # inner step
        [finish()],  # outer step
    )

    @nh.natural_function
    def inner() -> None:
        """natural
        Look around.
        """

    @nh.natural_function
    def outer() -> None:
        parent_only = "visible to the nested step"  # noqa: F841
        """natural
        Call <inner>.
        """

    with nh.run(executor):
        outer()
    inner_prompt = str(script.seen[1][0].parts[-1].content)
    assert 'parent_only: str = "visible to the nested step"' in inner_prompt


def test_function_without_blocks_is_returned_unchanged() -> None:
    def plain(x: int) -> int:
        """Just a docstring."""
        return x

    assert nh.natural_function(plain) is plain


def test_decorated_function_keeps_its_metadata() -> None:
    @nh.natural_function
    def documented(a: int, b: int = 2, *, c: str = "x") -> int:
        """natural
        Nothing.
        """
        return a

    assert documented.__name__ == "documented"
    assert documented.__defaults__ == (2,)
    assert documented.__kwdefaults__ == {"c": "x"}
    assert documented.__doc__.startswith("natural\n")


def test_blocks_run_without_an_executor_raise_a_clear_error() -> None:
    @nh.natural_function
    def orphan() -> None:
        """natural
        Nothing.
        """

    with pytest.raises(nh.NighthawkError, match="no step executor is set"):
        orphan()


def test_traceback_points_at_the_block_line() -> None:
    executor, _ = scripted_executor()

    @nh.natural_function
    def broken() -> None:
        x = 1  # noqa: F841
        """natural
        Use <missing_name_here>.
        """

    with nh.run(executor), pytest.raises(NameError) as info:
        broken()
    entry = [entry for entry in info.traceback if entry.name == "broken"][0]
    assert str(entry.path) == __file__
    assert '"""natural' in str(entry.statement)


@nh.natural_function
def count_nodes(tree: dict) -> int:
    total = sum(count_nodes(child) for child in tree.get("children", []))
    """natural
    Add one for <tree> itself to <:total>.
    """
    return total


def test_module_level_natural_function_may_call_itself_by_name() -> None:
    executor, _ = scripted_executor(*([[assign("total", "total + 1"), finish()]] * 2))
    with nh.run(executor):
        assert count_nodes({"children": [{}]}) == 2


def test_method_may_name_its_own_class() -> None:
    executor, _ = scripted_executor([finish()])

    class Node:
        @nh.natural_function
        def copy(self) -> bool:
            """natural
            Nothing to do.
            """
            return isinstance(self, Node)

    with nh.run(executor):
        assert Node().copy() is True


def test_interpolated_data_is_never_read_as_a_binding() -> None:
    executor, script = scripted_executor([finish()])

    @nh.natural_function
    def summarise(page: str) -> None:
        f"""natural
        Summarise this page:
        {page}
        """

    with nh.run(executor):
        summarise("<p>Hi</p> <:oops>")
    assert "<p>Hi</p> <:oops>" in str(script.seen[0][0].parts[-1].content)


def test_natural_function_must_be_the_innermost_decorator() -> None:
    import functools

    def logged(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            return function(*args, **kwargs)

        return wrapper

    with pytest.raises(nh.NaturalParseError, match="put `@natural_function` directly above the `def`"):

        @nh.natural_function
        @logged
        def wrapped() -> None:
            """natural
            Nothing.
            """


def test_methods_do_not_see_class_attributes_as_enclosing_variables() -> None:
    executor, script = scripted_executor([finish()])

    class Limits:
        MODULE_CONSTANT = 99

        @nh.natural_function
        def show(self) -> None:
            """natural
            Use <MODULE_CONSTANT>.
            """

    with nh.run(executor):
        Limits().show()
    assert "MODULE_CONSTANT: int = 40" in str(script.seen[0][0].parts[-1].content)


def test_block_where_python_forbids_return_is_a_parse_error() -> None:
    with pytest.raises(nh.NaturalParseError, match="a Natural block cannot be placed here"):

        @nh.natural_function
        def grouped() -> None:
            try:
                pass
            except* ValueError:
                """natural
                Handle it.
                """


def test_nested_step_does_not_commit_a_write_binding_it_only_inherited() -> None:
    executor, _ = scripted_executor(
        [call("nh_eval", expression="results.append(classify())")],  # the outer step calls the inner function
        [finish()],  # the inner step sets nothing
        [finish()],
    )

    @nh.natural_function
    def classify() -> str:
        label = "inner default"
        """natural
        Maybe set <:label>.
        """
        return label

    @nh.natural_function
    def outer(label: str, results: list[str]) -> None:
        """natural
        Call <classify> and keep its answer in <results>.
        """

    results: list[str] = []
    with nh.run(executor):
        outer("outer value", results)
    assert results == ["inner default"]
