"""The ready-made oversight policies: `read_only` and `allow_tools`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor


class Box:
    label = "old"


def run_under(oversight: Any, *tool_calls: Any, **namespace: Any) -> list[dict[str, Any]]:
    """Run a block making `tool_calls` with `namespace` as its variables (the modules come from this module's
    globals); the envelopes the model read."""
    executor, script = scripted_executor(list(tool_calls), [finish()])

    @nh.natural_function
    def block(box: Any = None, path: Any = None, tidy: Any = None, values: Any = None, chosen_mode: Any = None) -> None:
        """natural
        Look at the values.
        """

    with nh.run(executor), nh.scope(oversight=oversight):
        block(**namespace)
    return [json.loads(text) for text in script.last_tool_results()]


def evaluate(expression: str) -> Any:
    return call("nh_eval", expression=expression)


def error_of(envelope: dict[str, Any]) -> str | None:
    return None if envelope["error"] is None else envelope["error"]["message"]


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "data.csv"
    path.write_text("a,b\n")
    return path


def test_read_only_refuses_os_remove_and_the_file_stays(victim: Path) -> None:
    (envelope,) = run_under(nh.oversight.read_only(), evaluate(f"os.remove({str(victim)!r})"))
    assert error_of(envelope) == (
        "read-only: `os.remove` is on the deny list ('os.remove'); read the values without changing anything"
    )
    assert victim.exists()


def test_read_only_refuses_a_denied_function_imported_under_another_name(victim: Path) -> None:
    from os import remove as tidy

    (envelope,) = run_under(nh.oversight.read_only(), evaluate(f"tidy({str(victim)!r})"), tidy=tidy)
    assert "`tidy` is on the deny list ('os.remove')" in (error_of(envelope) or "")
    assert victim.exists()


def test_read_only_refuses_shutil_rmtree(tmp_path: Path) -> None:
    (envelope,) = run_under(nh.oversight.read_only(), evaluate(f"shutil.rmtree({str(tmp_path)!r})"))
    assert "`shutil.rmtree` is on the deny list" in (error_of(envelope) or "")
    assert tmp_path.exists()


def test_read_only_refuses_every_function_of_subprocess() -> None:
    (envelope,) = run_under(nh.oversight.read_only(), evaluate("subprocess.check_output(['true'])"))
    assert "('subprocess')" in (error_of(envelope) or "")


@pytest.mark.parametrize("mode", ["'w'", "'a'", "'r+'", "mode='x'", "'wb'", "chosen_mode"])
def test_read_only_refuses_open_for_writing(victim: Path, mode: str) -> None:
    (envelope,) = run_under(
        nh.oversight.read_only(), evaluate(f"open({str(victim)!r}, {mode}).write('gone')"), chosen_mode="w"
    )
    assert "opens a file for writing" in (error_of(envelope) or "")
    assert victim.read_text() == "a,b\n"


def test_read_only_refuses_a_path_opened_for_writing(victim: Path) -> None:
    (envelope,) = run_under(nh.oversight.read_only(), evaluate("path.open('w').write('gone')"), path=victim)
    assert "opens a file for writing" in (error_of(envelope) or "")
    assert victim.read_text() == "a,b\n"


def test_read_only_lets_a_path_be_opened_for_reading(victim: Path) -> None:
    (envelope,) = run_under(nh.oversight.read_only(), evaluate("path.open().read()"), path=victim)
    assert envelope == {"value": "a,b\n", "error": None}


def test_read_only_lets_open_for_reading_run(victim: Path) -> None:
    (envelope,) = run_under(nh.oversight.read_only(), evaluate(f"open({str(victim)!r}).read()"))
    assert envelope == {"value": "a,b\n", "error": None}


def test_read_only_refuses_writing_methods_of_any_object(victim: Path) -> None:
    (envelope,) = run_under(nh.oversight.read_only(), evaluate("path.write_text('x')"), path=victim)
    assert "('.write_text')" in (error_of(envelope) or "")
    assert victim.read_text() == "a,b\n"


def test_read_only_refuses_assigning_an_attribute_of_an_existing_object() -> None:
    box = Box()
    (envelope,) = run_under(nh.oversight.read_only(), call("nh_assign", target_path="box.label", expression="'new'"), box=box)
    assert "would change an existing object" in (error_of(envelope) or "")
    assert box.label == "old"


def test_read_only_lets_a_bare_name_be_assigned() -> None:
    (envelope,) = run_under(nh.oversight.read_only(), call("nh_assign", target_path="total", expression="1 + 1"))
    assert envelope["error"] is None


def test_read_only_checks_the_expression_of_an_assignment(victim: Path) -> None:
    (envelope,) = run_under(
        nh.oversight.read_only(), call("nh_assign", target_path="gone", expression=f"os.unlink({str(victim)!r})")
    )
    assert "`os.unlink` is on the deny list" in (error_of(envelope) or "")


def test_read_only_lets_reading_expressions_run() -> None:
    (envelope,) = run_under(nh.oversight.read_only(), evaluate("sorted(os.listdir('.')) and len(values)"), values=[1, 2])
    assert envelope == {"value": 2, "error": None}


def test_the_deny_list_can_be_extended() -> None:
    policy = nh.oversight.read_only(deny=nh.oversight.DENIED_CALLS | {"json.dumps"})
    (envelope,) = run_under(policy, evaluate("json.dumps(1)"))
    assert "('json.dumps')" in (error_of(envelope) or "")


def test_the_deny_list_can_be_trimmed() -> None:
    box = Box()
    policy = nh.oversight.read_only(deny=nh.oversight.DENIED_CALLS - {"setattr"})
    (envelope,) = run_under(policy, evaluate("setattr(box, 'label', 'new')"), box=box)
    assert envelope["error"] is None
    assert box.label == "new"


def test_trimming_a_file_call_from_the_deny_list_leaves_it_to_the_runtime_guard(victim: Path) -> None:
    policy = nh.oversight.read_only(deny=nh.oversight.DENIED_CALLS - {"os.remove"})
    (envelope,) = run_under(policy, evaluate(f"os.remove({str(victim)!r})"))
    assert (error_of(envelope) or "").startswith("OperationRefusedError: read_only refused os.remove of")
    assert victim.exists()


def test_a_deny_list_given_as_one_string_is_refused() -> None:
    with pytest.raises(TypeError, match=r"`deny` must be a collection of dotted names, got 'os.remove'; write `deny=\{'os.remove'\}`"):
        nh.oversight.read_only(deny="os.remove")


def test_allow_tools_given_a_list_says_to_name_the_tools_one_by_one() -> None:
    with pytest.raises(TypeError, match=r"`allow_tools` takes tool names one by one, got \(\['nh_eval'\],\); write `allow_tools\('nh_eval', 'my_tool'\)`"):
        nh.oversight.allow_tools(["nh_eval"])  # type: ignore[arg-type]


def test_read_only_sent_to_another_process_refuses_a_denied_function_under_another_name() -> None:
    # How `nighthawk.ray` sends the oversight in force to its actors: by value, with cloudpickle.
    cloudpickle = pytest.importorskip("ray.cloudpickle")
    sent = cloudpickle.dumps(nh.oversight.read_only())
    code = (
        "import sys, pickle, os\n"
        "from types import MappingProxyType\n"
        "from nighthawk.oversight import ToolCall\n"
        "policy = pickle.loads(sys.stdin.buffer.read())\n"
        "call = ToolCall(tool_name='nh_eval', argument_name_to_value={'expression': 'tidy(\\'x\\')'}, step_id='s',\n"
        "                execution_context=None, processed_natural_program='', step_locals={'tidy': os.remove},\n"
        "                step_globals={})\n"
        "print(policy.inspect_tool_call(call))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], input=sent, capture_output=True, check=True)
    assert result.stdout.decode().startswith("Reject(reason=\"read-only: `tidy` is on the deny list ('os.remove')")


def test_allow_tools_refuses_a_tool_not_listed() -> None:
    (envelope,) = run_under(nh.oversight.allow_tools("nh_eval"), call("nh_assign", target_path="x", expression="1"))
    assert error_of(envelope) == "the tool 'nh_assign' is not allowed here; use only nh_eval"


def test_allow_tools_lets_a_listed_tool_run() -> None:
    (envelope,) = run_under(nh.oversight.allow_tools("nh_eval"), evaluate("1 + 1"))
    assert envelope == {"value": 2, "error": None}


def test_policies_combine(victim: Path) -> None:
    both = nh.oversight.combine(nh.oversight.allow_tools("nh_eval"), nh.oversight.read_only())
    first, second = run_under(both, evaluate(f"os.remove({str(victim)!r})"), call("nh_assign", target_path="x", expression="1"))
    assert "deny list" in (error_of(first) or "")
    assert "'nh_assign' is not allowed" in (error_of(second) or "")
