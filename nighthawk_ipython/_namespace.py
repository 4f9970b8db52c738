"""The notebook namespace as a frame: which names a `%%natural` cell sees as its Python locals.

In a cell the notebook namespace (`shell.user_ns`) plays both roles a function has: its user variables are
the Python locals, and the whole live dict is the globals. IPython keeps its own bookkeeping in the same
dict (`In`, `Out`, `_`, `_i3`, `_oh`, `exit`, ...); none of that reaches step locals. Modules stay out of
the locals too (they are globals in spirit, and still reachable through the globals), as do dunder names.
"""

from __future__ import annotations

import builtins
import re
import types
from collections.abc import Mapping
from typing import Any

from nighthawk.program.block import Program, unresolved_read
from nighthawk.program.frame import Frame
from nighthawk.step._validation import resolve_annotation

__all__ = ["IPYTHON_NAMES", "build_frame", "is_user_name", "namespace_annotations", "notebook_locals", "resolve_reads"]

IPYTHON_NAMES: frozenset[str] = frozenset(
    {"In", "Out", "_", "__", "___", "_i", "_ii", "_iii", "_oh", "_ih", "_dh", "exit", "quit", "get_ipython"}
)
"""Names IPython puts into every namespace for its own history and helpers."""

_NUMBERED_HISTORY = re.compile(r"_i?\d+")  # `_3` (Out[3]) and `_i3` (In[3])


def is_user_name(name: str, value: object, hidden: Mapping[str, object]) -> bool:
    """Whether `name` is a user variable that belongs in step locals.

    Args:
        name: A key of the notebook namespace.
        value: Its value.
        hidden: `shell.user_ns_hidden` (names IPython set up and hides from `%who`).
    """
    if name in IPYTHON_NAMES or _NUMBERED_HISTORY.fullmatch(name):
        return False
    if name.startswith("__") and name.endswith("__"):
        return False
    if name in hidden and hidden[name] is value:
        return False  # still IPython's object; a user who rebinds `open` gets their own value listed
    return not isinstance(value, types.ModuleType)


def notebook_locals(user_ns: Mapping[str, object], hidden: Mapping[str, object], program: Program) -> dict[str, object]:
    """The user variables of the notebook, the program's bound names first.

    The core bounds the locals summary by items and tokens and keeps the first entries, so the names the
    program mentions come first, then every other user variable in the namespace's order.
    """
    selected: dict[str, object] = {}
    for name in (*program.reads, *program.writes, *program.references):
        if name in user_ns and name not in selected and is_user_name(name, user_ns[name], hidden):
            selected[name] = user_ns[name]
    for name, value in user_ns.items():
        if name not in selected and is_user_name(name, value, hidden):
            selected[name] = value
    return selected


def resolve_reads(user_ns: Mapping[str, object], program: Program) -> dict[str, object]:
    """The value of each `<name>` read binding: the namespace first, then builtins, like Python.

    Raises:
        NameError: A read binding names nothing, with Python's own message.
    """
    values: dict[str, object] = {}
    for name in program.reads:
        if name in user_ns:
            values[name] = user_ns[name]
        elif hasattr(builtins, name):
            values[name] = getattr(builtins, name)
        else:
            raise unresolved_read(NameError(f"name {name!r} is not defined", name=name))
    return values


def namespace_annotations(user_ns: Mapping[str, object], program: Program) -> dict[str, object]:
    """Types of the cell's write bindings declared in the namespace (`x: Report` in an earlier cell).

    A string annotation (`from __future__ import annotations` in the notebook) is evaluated in the
    namespace; one that names nothing leaves its binding untyped rather than failing the cell.
    """
    declared = user_ns.get("__annotations__")
    if not isinstance(declared, Mapping):
        return {}
    # Evaluating reads the namespace only; the notebook's own dict (holding `__builtins__`) serves as is.
    namespace = user_ns if isinstance(user_ns, dict) else dict(user_ns)
    found: dict[str, object] = {}
    for name in program.writes:
        if name not in declared:
            continue
        try:
            found[name] = resolve_annotation(declared[name], namespace)
        except Exception:  # an annotation naming something undefined: Python itself never evaluates it
            continue
    return found


def build_frame(shell: Any, program: Program, *, step_id: str, filename: str, line: int) -> Frame:
    """The frame of a `%%natural` cell: the notebook namespace as locals and globals.

    Raises:
        NameError: A read binding names nothing.
    """
    user_ns = shell.user_ns
    return Frame(
        python_locals=notebook_locals(user_ns, shell.user_ns_hidden, program),
        python_globals=user_ns,
        read_values=resolve_reads(user_ns, program),
        in_loop=False,
        binding_types=namespace_annotations(user_ns, program),
        return_type=object,
        is_async=False,
        step_id=step_id,
        infer_types=False,
        module_namespace=True,
        filename=filename,
        line=line,
    )
