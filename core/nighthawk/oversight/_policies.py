"""Ready-made oversight: `read_only`, `no_network` and `allow_tools`, policies users pick without writing one.

`read_only` works on two levels. Its tool-call hook reads the model's expression with `ast` before it runs
and refuses calls of names on a deny list, so the plain ways of writing to disk or starting programs
(`os.remove(p)`, `open(p, "w")`, `subprocess.run(...)`, also under another name: `from os import remove`)
are named to the model before anything runs. But reading cannot see what a called function does inside,
and Python offers many other roads to the same effect: what enforces the policy is its runtime guard
(`_audit.py`), checked on Python's audit events while the model's code runs. `no_network` is a runtime
guard only. Both are guard rails against mistakes and prompt-injected instructions, not a sandbox;
`docs/oversight.md` says so to users.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import os
from collections.abc import Collection, Mapping
from types import ModuleType

from ._kinds import Accept, Oversight, Reject, RuntimeGuard, ToolCall, ToolCallDecision

__all__ = ["DENIED_CALLS", "allow_tools", "no_network", "read_only"]

_FILE_CALLS = frozenset(
    {
        # files and directories
        "os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.rename", "os.renames", "os.replace",
        "os.truncate", "os.mkdir", "os.makedirs", "os.chmod", "os.chown", "os.link", "os.symlink",
        "os.mkfifo", "os.mknod",
        "shutil.rmtree", "shutil.move", "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree",
        # methods of any object with these names (paths, data frames)
        ".unlink", ".rmdir", ".touch", ".write_text", ".write_bytes",
        ".to_csv", ".to_parquet", ".to_excel", ".to_sql", ".to_pickle", ".to_feather",
    }
)
"""The deny entries that change files: with `writable` directories, which paths they touch decides, so the
runtime guard judges them instead of the reading."""

DENIED_CALLS: frozenset[str] = _FILE_CALLS | {
    # other programs and processes
    "subprocess", "os.system", "os.popen", "os.kill", "os.fork", "os.execv", "os.execvp", "pty.spawn",
    # functions left to run later, outside the step
    "atexit.register", "weakref.finalize", "signal.signal",
    # code that would escape the analysis, and changes to existing objects
    "eval", "exec", "compile", "setattr", "delattr",
}
"""What `read_only()` refuses by default. An entry is a dotted name (`os.remove`), a module whose every
function is refused (`subprocess`), or `.name` for a method of that name on any object."""
_WRITE_FLAG_NAMES = frozenset({"O_WRONLY", "O_RDWR", "O_APPEND", "O_CREAT", "O_TRUNC"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

_EXPRESSION_ARGUMENT = {"nh_eval": "expression", "nh_assign": "expression", "nh_outcome": "return_expression"}
"""The calls that run a model-written expression, and the argument that holds it (`nh_outcome`: a return
expression, shown to the hooks before it is evaluated)."""
_WRITE_MODES = frozenset("wax+")
_MISSING = object()


def read_only(
    *, deny: Collection[str] = DENIED_CALLS, writable: Collection[str | os.PathLike[str]] = ()
) -> Oversight:
    """An oversight that lets the model look but not change.

    While the model's code runs (`nh_eval`, `nh_assign`, a return expression, and the functions they call),
    it refuses, however the code reaches them: opening a file to write, append, create or truncate;
    deleting, renaming, moving, truncating, linking, `chmod`/`chown`, times, extended attributes and flags,
    making or removing directories; typing into a terminal; renaming the machine;
    `sqlite3.connect` to a file (but `:memory:` and `mode=ro`); starting processes (a thread it starts runs
    under the policy); sending signals. The model reads an `OperationRefusedError` naming the operation and
    goes on.

    Before a call runs, it also reads the expression and refuses `nh_assign` to an attribute of an existing
    object (`df.columns = ...`), `open(...)` for writing, and calls of the names in `deny`, naming them.
    Assigning a bare name stays allowed: a step's variables reach Python only through its write bindings.
    User tools are not inspected and run unguarded (they are the functions you chose to offer).

    Args:
        deny: Dotted names to refuse when reading; extend or trim the default, `DENIED_CALLS | {"requests.post"}`.
        writable: Directories inside which files may change (`[tmp_dir]`).
    """
    if isinstance(deny, str) or not all(isinstance(entry, str) for entry in deny):
        # A lone string would become a set of its characters: a deny list that refuses nothing meant.
        raise TypeError(
            f"`deny` must be a collection of dotted names, got {deny!r:.80}; write `deny={{'os.remove'}}`, or "
            "extend the default with `DENIED_CALLS | {'requests.post'}`"
        )
    if isinstance(writable, str | bytes | os.PathLike) or not all(isinstance(p, str | os.PathLike) for p in writable):
        raise TypeError(
            f"`writable` must be a collection of directories, got {writable!r:.80}; write `writable=[tmp_dir]`"
        )
    directories = tuple(os.path.realpath(os.fspath(path)) for path in writable)
    # With writable directories the path decides, which only the runtime guard sees.
    entries = frozenset(deny) - _FILE_CALLS if directories else frozenset(deny)
    _resolved(entries)  # import the modules named now, not at the first call

    def inspect_tool_call(call: ToolCall) -> ToolCallDecision:
        arguments = call.argument_name_to_value
        if call.tool_name == "nh_assign" and "." in str(arguments.get("target_path", "")):
            return Reject(
                f"read-only: `nh_assign` to {arguments['target_path']!r} would change an existing object; "
                "assign a bare name (a write binding) instead"
            )
        if call.tool_name not in _EXPRESSION_ARGUMENT:
            return Accept()
        expression = str(arguments.get(_EXPRESSION_ARGUMENT[call.tool_name], ""))
        problem = _refused_call(expression, entries, _resolved(entries), call, opening=not directories)
        return Accept() if problem is None else Reject(f"read-only: {problem}; read the values without changing anything")

    guard = RuntimeGuard(policy="read_only", files=True, writable=directories)
    return Oversight(inspect_tool_call=inspect_tool_call, runtime=(guard,), name="read_only")


def no_network(*, allow: Collection[str] = ()) -> Oversight:
    """An oversight that keeps the model's code off the network: while it runs, connecting, binding,
    sending to an address and looking up names are refused (but for the hosts in `allow`), and so is
    starting processes, which would be out of its reach (a thread runs under the policy).

    Your own code, before and after a step, and the provider's requests of the step are not affected.

    Args:
        allow: `host` or `host:port` entries that stay reachable (`"127.0.0.1:8000"`, `"localhost"`,
            `"[::1]:8000"`); a host name also allows the addresses it resolves to.
    """
    if isinstance(allow, str) or not all(isinstance(entry, str) for entry in allow):
        raise TypeError(
            f"`allow` must be a collection of `host` or `host:port` strings, got {allow!r:.80}; write "
            "`allow=['127.0.0.1:8000']`"
        )
    guard = RuntimeGuard(policy="no_network", network=True, allow=tuple(allow))
    return Oversight(runtime=(guard,), name="no_network")


def allow_tools(*names: str) -> Oversight:
    """An oversight that refuses every tool call but those of the tools named (`"nh_eval"`, a user tool).

    `allow_tools("nh_eval")` lets the model evaluate expressions but never `nh_assign`. A return expression
    (seen as `nh_outcome`) is an expression too: it is allowed with `"nh_eval"`, or by naming `"nh_outcome"`.
    """
    if not all(isinstance(name, str) for name in names):
        raise TypeError(
            f"`allow_tools` takes tool names one by one, got {names!r:.80}; write `allow_tools('nh_eval', 'my_tool')`"
        )
    allowed = frozenset(names) | ({"nh_outcome"} if "nh_eval" in names else set())

    def inspect_tool_call(call: ToolCall) -> ToolCallDecision:
        if call.tool_name in allowed:
            return Accept()
        if call.tool_name == "nh_outcome":
            return Reject(
                "evaluating a return expression is not allowed here; name 'nh_outcome' (or 'nh_eval') in "
                "`allow_tools(...)` to allow it"
            )
        return Reject(f"the tool {call.tool_name!r} is not allowed here; use only {', '.join(sorted(set(names))) or 'no tool'}")

    return Oversight(inspect_tool_call=inspect_tool_call, name="allow_tools")


# --- reading an expression ----------------------------------------------------------------------------


def _refused_call(
    expression: str, deny: frozenset[str], objects: Mapping[int, str], call: ToolCall, *, opening: bool
) -> str | None:
    """Why `expression` is refused, or `None`: the first call in it of a denied name or (with `opening`) a
    writing `open`."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return None  # it cannot run either; the tool says why
    namespace = _Namespace(call.step_locals, call.step_globals)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        text = _dotted(node.func)
        value = namespace.value(node.func)
        if value is os.open or text == "os.open":
            if opening and _flags_write(node):
                return f"`{ast.unparse(node)}` opens a file for writing"
            continue
        is_open = value is builtins.open or text in ("open", "io.open")
        if is_open or text.endswith(".open"):
            # `open(path, mode)` and a module's `gzip.open(path, mode)`; a path's `p.open(mode)` has it first.
            owner = namespace.value(node.func.value) if isinstance(node.func, ast.Attribute) else None
            module_function = isinstance(owner, ModuleType)
            if opening and _writes(node, mode_at=1 if is_open or module_function else 0):
                return f"`{ast.unparse(node)}` opens a file for writing"
            continue
        entry = _matching_entry(text, value, deny, objects)
        if entry is not None:
            return f"`{ast.unparse(node.func)}` is on the deny list ({entry!r})"
    return None


def _dotted(node: ast.expr) -> str:
    """`os.path.join` for a name or an attribute chain; `?.sum` when the chain starts from a computed value."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _matching_entry(text: str, value: object, deny: frozenset[str], objects: Mapping[int, str]) -> str | None:
    method = "." + text.rpartition(".")[2]
    if "." in text and method in deny:
        return method
    for entry in deny:
        if text == entry or text.startswith(entry + "."):
            return entry
    if value is _MISSING:
        return None
    if id(value) in objects:  # the same function under another name (`from os import remove`)
        return objects[id(value)]
    home = getattr(value, "__module__", None) or ""
    return next((entry for entry in deny if home == entry or home.startswith(entry + ".")), None)


@functools.lru_cache(maxsize=8)
def _resolved(deny: frozenset[str]) -> dict[int, str]:
    """The functions the dotted entries name, by identity (entries whose module is not importable skip).

    Cached per process, never held by the hook: identities mean nothing in the process a hook is sent to
    (`nighthawk.ray` sends it to its actors), which finds its own here."""
    found: dict[int, str] = {}
    for entry in deny:
        module_name, _, attribute = entry.rpartition(".")
        try:
            owner: object = importlib.import_module(module_name) if module_name else builtins
        except ImportError:
            continue
        value = getattr(owner, attribute, _MISSING)
        if value is not _MISSING and not isinstance(value, ModuleType):
            found[id(value)] = entry
    return found


def _writes(node: ast.Call, *, mode_at: int) -> bool:
    """Whether an `open(...)` call may write: a mode with `w`, `a`, `x` or `+`, or one that is not a literal
    (`mode_at` is the mode's position among the call's arguments)."""
    mode: ast.expr | None = node.args[mode_at] if len(node.args) > mode_at else None
    for keyword in node.keywords:
        if keyword.arg == "mode":
            mode = keyword.value
        elif keyword.arg is None:
            return True  # `**options` may hold a mode
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return bool(_WRITE_MODES & set(mode.value))
    return True


def _flags_write(node: ast.Call) -> bool:
    """Whether an `os.open(path, flags)` call may write: flags naming `O_WRONLY`, `O_RDWR`, `O_APPEND`,
    `O_CREAT` or `O_TRUNC`, or flags the reading cannot tell."""
    flags: ast.expr | None = node.args[1] if len(node.args) > 1 else None
    for keyword in node.keywords:
        if keyword.arg is None:
            return True  # `**options` may hold the flags
        if keyword.arg == "flags":
            flags = keyword.value
    return flags is not None and _may_write(flags)


def _may_write(flags: ast.expr) -> bool:
    match flags:
        case ast.BinOp(left=left, right=right):
            return _may_write(left) or _may_write(right)
        case ast.Constant(value=int(bits)):
            return bool(bits & _WRITE_FLAGS)
        case ast.Attribute(attr=name) | ast.Name(id=name):
            return not name.startswith("O_") or name in _WRITE_FLAG_NAMES
        case _:
            return True


class _Namespace:
    """Looks up a callee the way the expression would, without running code: names, then attributes of
    modules only (an attribute of any other object could be a property)."""

    def __init__(self, step_locals: Mapping[str, object], step_globals: Mapping[str, object]) -> None:
        self._layers = (step_locals, step_globals, vars(builtins))

    def value(self, node: ast.expr) -> object:
        if isinstance(node, ast.Name):
            return next((layer[node.id] for layer in self._layers if node.id in layer), _MISSING)
        if isinstance(node, ast.Attribute):
            owner = self.value(node.value)
            if isinstance(owner, ModuleType):
                return getattr(owner, node.attr, _MISSING)
        return _MISSING
