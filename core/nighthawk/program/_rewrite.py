"""The rewrite behind `@natural_function`: each Natural block statement of a function's syntax tree
becomes a call into the function's runtime followed by plain Python, and the rewritten def is compiled.

The generated code reads the block's read bindings as ordinary name lookups, hands them with `locals()` to
`RUNTIME.run` (or `run_async`), then assigns the write bindings the step committed and does what the
outcome asks (`return`, `break`, `continue`, `raise`). The compiled code keeps the file name, the line
numbers and the closure of the original function. `road.decorator` decides when to compile and owns the runtime.
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass

from ..errors import NaturalParseError
from .block import Program, parse_program, scan_bindings, strip_sentinel

__all__ = ["PRIVATE_PREFIX", "RUNTIME", "BlockSpec", "build_code", "read_late", "rewrite_body"]

RUNTIME = "_nighthawk_rt"
"""The closure variable that holds the function's runtime (a `road.decorator._FunctionRuntime`)."""
_RESULT = "_nighthawk_result"
_READS = "_nighthawk_reads"
PRIVATE_PREFIX = "_nighthawk_"


@dataclass(frozen=True, kw_only=True)
class BlockSpec:
    """What the runtime needs of one Natural block, found at decoration; the generated call names it by index."""

    program: Program | None
    """Parsed at decoration for plain literals; `None` for f-strings (parsed after interpolation)."""
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    line: int
    in_loop: bool
    fields: tuple[str, ...] = ()
    """Source of each `{...}` field of an f-string block."""


def build_code(node: ast.stmt, function: types.FunctionType, filename: str, free_names: list[str]) -> types.CodeType:
    """Compile the rewritten def inside a factory whose parameters become the closure's free variables."""
    inner: ast.stmt = node
    owner = _owner_class(function.__qualname__)
    if owner is not None:
        # Compiling inside a class of the same name keeps private-name mangling (`self.__x`) identical.
        inner = ast.ClassDef(name=owner, bases=[], keywords=[], body=[node], decorator_list=[], type_params=[])
    params = [ast.arg(arg=name) for name in free_names if name != "__class__" or owner is None]
    # The def (and the stand-in class) would otherwise be locals of the factory, and a body that names
    # them (recursion, `isinstance(x, Owner)`) would close over the factory instead of the module. A name
    # the function closes over (a def calling itself inside an enclosing function) is a factory parameter
    # instead, bound to the enclosing function's cell; when no name is left, an empty `global` would not
    # compile, so none is written.
    module_names = [name for name in (function.__name__, owner) if name and name not in free_names]
    declarations: list[ast.stmt] = [ast.Global(names=module_names)] if module_names else []
    factory = ast.FunctionDef(
        name="_nighthawk_factory",
        args=ast.arguments(posonlyargs=[], args=params, vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[*declarations, inner, ast.Return(value=ast.Constant(None))],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    try:
        module_code = compile(module, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:  # e.g. a block inside `except*`, where `return`/`break` are not allowed
        raise NaturalParseError(
            f"a Natural block cannot be placed here: {exc.msg}", filename=filename, line=exc.lineno
        ) from exc
    found = _find_code(module_code, function.__name__, function.__code__.co_firstlineno)
    if found is None:  # pragma: no cover - the def is always there
        raise NaturalParseError(f"could not compile {function.__qualname__!r}", filename=filename)
    return found


def _owner_class(qualname: str) -> str | None:
    parts = qualname.split(".")
    return parts[-2] if len(parts) >= 2 and parts[-2] != "<locals>" else None


def _find_code(code: types.CodeType, name: str, first_line: int) -> types.CodeType | None:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name and const.co_firstlineno >= first_line - 1 and const.co_name != "_nighthawk_factory":
                return const
            found = _find_code(const, name, first_line)
            if found is not None:
                return found
    return None


# --- the rewrite ------------------------------------------------------------------------------------


def _block_literal(statement: ast.stmt) -> ast.Constant | ast.JoinedStr | None:
    if not isinstance(statement, ast.Expr):
        return None
    value = statement.value
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and strip_sentinel(value.value) is not None:
        return value
    if isinstance(value, ast.JoinedStr) and value.values:
        first = value.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("natural\n"):
            return value
    return None


def rewrite_body(
    body: list[ast.stmt],
    specs: list[BlockSpec],
    annotated: dict[str, ast.expr],
    nested: list[str],
    *,
    in_loop: bool,
    is_async: bool,
    filename: str,
) -> list[ast.stmt]:
    rewritten: list[ast.stmt] = []
    for statement in body:
        literal = _block_literal(statement)
        if literal is not None:
            rewritten.extend(_block_statements(literal, statement, specs, in_loop=in_loop, is_async=is_async, filename=filename))
            continue
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            annotated[statement.target.id] = statement.annotation
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and _runs_blocks(statement):
            # A nested def with Natural blocks becomes a natural function itself, compiled when the enclosing
            # function defines it (so its closures and the enclosing variables are read at call time).
            statement.decorator_list.append(
                ast.copy_location(
                    ast.Attribute(value=ast.Name(id=RUNTIME, ctx=ast.Load()), attr="nested", ctx=ast.Load()), statement
                )
            )
            nested.append(statement.name)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            rewritten.append(statement)  # nested definitions keep their own blocks
            continue
        for field_name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(statement, field_name, None)
            if not isinstance(children, list) or not children:
                continue
            loop_body = isinstance(statement, (ast.For, ast.AsyncFor, ast.While)) and field_name == "body"
            if field_name in ("handlers", "cases"):
                for child in children:
                    child.body = rewrite_body(
                        child.body, specs, annotated, nested, in_loop=in_loop, is_async=is_async, filename=filename
                    )
            else:
                setattr(
                    statement,
                    field_name,
                    rewrite_body(
                        children, specs, annotated, nested, in_loop=in_loop or loop_body, is_async=is_async, filename=filename
                    ),
                )
        rewritten.append(statement)
    return rewritten


def _runs_blocks(definition: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a nested def holds Natural blocks (at any depth) and is not made a natural function already."""
    if any(_names_natural_function(decorator) for decorator in definition.decorator_list):
        return False
    if isinstance(definition, ast.AsyncFunctionDef) and any(
        isinstance(child, (ast.Yield, ast.YieldFrom)) for child in ast.walk(definition)
    ):
        return False  # an async generator cannot run blocks; it stays a plain function
    return any(
        isinstance(child, ast.stmt) and _block_literal(child) is not None
        for statement in definition.body
        for child in ast.walk(statement)
    )


def _names_natural_function(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
    return name == "natural_function"


def read_late(node: ast.stmt, names: set[str]) -> None:
    """Make the read tuples of `names` ask the runtime for the enclosing frame's current value."""
    for child in ast.walk(node):
        if not (isinstance(child, ast.Assign) and isinstance(child.value, ast.Tuple)):
            continue
        if not any(isinstance(target, ast.Name) and target.id == _READS for target in child.targets):
            continue
        child.value.elts = [
            ast.copy_location(
                ast.Call(
                    func=ast.Attribute(value=ast.Name(id=RUNTIME, ctx=ast.Load()), attr="outer", ctx=ast.Load()),
                    args=[ast.Constant(element.id)],
                    keywords=[],
                ),
                element,
            )
            if isinstance(element, ast.Name) and element.id in names
            else element
            for element in child.value.elts
        ]


def _block_statements(
    literal: ast.Constant | ast.JoinedStr,
    statement: ast.stmt,
    specs: list[BlockSpec],
    *,
    in_loop: bool,
    is_async: bool,
    filename: str,
) -> list[ast.stmt]:
    line = statement.lineno
    if isinstance(literal, ast.Constant):
        program = parse_program(strip_sentinel(literal.value) or "", filename=filename, line=line + 1)
        reads, writes = program.reads, program.writes
        rendered: ast.expr = ast.Constant(None)
        fields: tuple[str, ...] = ()
    else:
        program = None
        static_text = "".join(part.value if isinstance(part, ast.Constant) else "\x00" for part in literal.values)
        reads, writes = scan_bindings(static_text)
        rendered = _escaping_interpolations(literal)
        fields = tuple(ast.unparse(node.value) for node in ast.walk(literal) if isinstance(node, ast.FormattedValue))
    index = len(specs)
    specs.append(BlockSpec(program=program, reads=reads, writes=writes, line=line, in_loop=in_loop, fields=fields))
    call = f"{RUNTIME}.{'run_async' if is_async else 'run'}({index}, locals(), {_READS}, None)"
    # Read bindings are plain Python name lookups, so scoping is Python's own; a name that resolves to
    # nothing gets a hint, since `<li>`-style text in a program reads as a binding.
    lines = [
        f"try: {_READS} = ({''.join(f'{n}, ' for n in reads)})",
        f"except NameError as {PRIVATE_PREFIX}error: raise {RUNTIME}.unresolved({PRIVATE_PREFIX}error, {index}, locals()) from None",
        f"{_RESULT} = {'await ' if is_async else ''}{call}",
        f"if {_RESULT}.exception is not None: raise {_RESULT}.exception",
    ]
    lines += [f"if {name!r} in {_RESULT}.values: {name} = {_RESULT}.values[{name!r}]" for name in writes]
    lines.append(f"if {_RESULT}.kind == 'return': return {_RESULT}.value")
    if in_loop:
        lines.append(f"if {_RESULT}.kind == 'break': break")
        lines.append(f"if {_RESULT}.kind == 'continue': continue")
    generated = ast.parse("\n".join(lines)).body
    first = generated[1]
    assert isinstance(first, ast.Assign)
    awaited = first.value
    call_node = awaited.value if isinstance(awaited, ast.Await) else awaited
    assert isinstance(call_node, ast.Call)
    call_node.args[3] = rendered
    keep = {id(child) for child in ast.walk(rendered)}
    for new in generated:
        for child in ast.walk(new):
            if id(child) not in keep and "lineno" in child._attributes:
                ast.copy_location(child, statement)
    return generated


def _escaping_interpolations(literal: ast.JoinedStr) -> ast.JoinedStr:
    """The f-string with each `{...}` field passed through `escape_bindings`: data never becomes a binding."""
    parts: list[ast.expr] = []
    for part in literal.values:
        if isinstance(part, ast.FormattedValue):
            escaped = ast.Call(
                func=ast.Attribute(value=ast.Name(id=RUNTIME, ctx=ast.Load()), attr="escape", ctx=ast.Load()),
                args=[ast.JoinedStr(values=[part])],
                keywords=[],
            )
            part = ast.FormattedValue(value=escaped, conversion=-1, format_spec=None)
        parts.append(part)
    return ast.copy_location(ast.JoinedStr(values=parts), literal)
