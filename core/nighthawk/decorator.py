"""The function door: `@nighthawk.natural_function` compiles a function's Natural blocks once.

At decoration the function's source is parsed and every Natural block statement is replaced by a call into
the runner followed by plain Python: the commit of write bindings (ordinary assignments, so they become
real locals) and the control flow the outcome asks for (`return`, `break`, `continue`, `raise`). The new
code object keeps the original file name and line numbers and the original closure cells.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .block import Program, escape_bindings, parse_program, scan_bindings, strip_sentinel
from .errors import NaturalParseError
from .frame import Frame
from .runner import BlockResult, run_block, run_block_async

__all__ = ["natural_function"]

F = TypeVar("F", bound=Callable[..., Any])

_RUNTIME = "_nighthawk_rt"
_RESULT = "_nighthawk_result"
_PRIVATE_PREFIX = "_nighthawk_"


@dataclass(frozen=True, kw_only=True)
class _BlockSpec:
    program: Program | None
    """Parsed at decoration for plain literals; `None` for f-strings (parsed after interpolation)."""
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    line: int
    in_loop: bool


def natural_function(function: F) -> F:
    """Compile the Natural blocks of `function`; they run each time it is called.

    Works on sync and async functions, methods, static and class methods, closures, nested natural
    functions and functions defined in notebook cells. The source must be available to `inspect`.

    Raises:
        NaturalParseError: The source is unavailable or a block is malformed.
    """
    enclosing = sys._getframe(1)
    # Only a function frame is an enclosing scope in Python; a class body or a module is not.
    enclosing_locals = enclosing.f_locals if enclosing.f_code.co_flags & inspect.CO_OPTIMIZED else {}
    if isinstance(function, (staticmethod, classmethod)):
        return type(function)(_decorate(function.__func__, enclosing_locals))  # type: ignore[return-value]
    return _decorate(function, enclosing_locals)  # type: ignore[return-value]


def _decorate(function: object, enclosing_locals: Mapping[str, object]) -> types.FunctionType:
    if not inspect.isfunction(function):
        raise NaturalParseError(f"`@natural_function` needs a function, got {type(function).__name__}")
    if hasattr(function, "__wrapped__"):
        raise NaturalParseError(
            f"{function.__qualname__!r} is already wrapped by another decorator; put `@natural_function` "
            "directly above the `def` (innermost), other decorators above it"
        )
    if inspect.isasyncgenfunction(function):
        raise NaturalParseError(f"{function.__qualname__!r} is an async generator; Natural blocks cannot run in one")
    return _compile(function, enclosing_locals)


def _compile(function: types.FunctionType, enclosing_locals: Mapping[str, object]) -> types.FunctionType:
    code = function.__code__
    filename = code.co_filename
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError) as exc:
        raise NaturalParseError(
            f"the source of {function.__qualname__!r} is not available, so its Natural blocks cannot be read "
            "(define it in a file or a notebook cell)",
            filename=filename,
        ) from exc
    tree = ast.parse(source)
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != function.__name__:
        raise NaturalParseError(f"cannot find the definition of {function.__qualname__!r} in its source", filename=filename)
    ast.increment_lineno(tree, code.co_firstlineno - node.lineno if not node.decorator_list else code.co_firstlineno - node.decorator_list[0].lineno)
    node.decorator_list = []
    is_async = isinstance(node, ast.AsyncFunctionDef)
    specs: list[_BlockSpec] = []
    annotated: dict[str, ast.expr] = {}
    node.body = _rewrite(node.body, specs, annotated, in_loop=False, is_async=is_async, filename=filename)
    if not specs:
        return function

    runtime = _FunctionRuntime(function, specs, annotated, filename=filename)
    cells = {name: cell for name, cell in zip(code.co_freevars, function.__closure__ or (), strict=True)}
    cells[_RUNTIME] = types.CellType(runtime)
    read_names = {name for spec in specs for name in spec.reads}
    new_code = _build_code(node, function, filename, list(cells))
    # A read binding of an enclosing-function variable the body never mentions has no closure cell;
    # capture its value at decoration time instead (the closest Python allows).
    captured = {name for name in new_code.co_names if name in read_names and name in enclosing_locals and name not in cells}
    if captured:
        for name in captured:
            cells[name] = types.CellType(enclosing_locals[name])
        new_code = _build_code(node, function, filename, list(cells))
    closure = tuple(cells[name] for name in new_code.co_freevars)
    compiled = types.FunctionType(new_code, function.__globals__, function.__name__, function.__defaults__, closure)
    compiled.__kwdefaults__ = function.__kwdefaults__
    compiled.__annotations__ = function.__annotations__
    compiled.__qualname__ = function.__qualname__
    compiled.__doc__ = function.__doc__
    compiled.__module__ = function.__module__
    compiled.__dict__.update(function.__dict__)
    compiled.__wrapped__ = function  # type: ignore[attr-defined]
    runtime.function = compiled
    return compiled


def _build_code(node: ast.stmt, function: types.FunctionType, filename: str, free_names: list[str]) -> types.CodeType:
    """Compile the rewritten def inside a factory whose parameters become the closure's free variables."""
    inner: ast.stmt = node
    owner = _owner_class(function.__qualname__)
    if owner is not None:
        # Compiling inside a class of the same name keeps private-name mangling (`self.__x`) identical.
        inner = ast.ClassDef(name=owner, bases=[], keywords=[], body=[node], decorator_list=[], type_params=[])
    params = [ast.arg(arg=name) for name in free_names if name != "__class__" or owner is None]
    # The def (and the stand-in class) would otherwise be locals of the factory, and a body that names
    # them (recursion, `isinstance(x, Owner)`) would close over the factory instead of the module.
    module_names = [name for name in (function.__name__, owner) if name and name not in free_names]
    factory = ast.FunctionDef(
        name="_nighthawk_factory",
        args=ast.arguments(posonlyargs=[], args=params, vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[ast.Global(names=module_names), inner, ast.Return(value=ast.Constant(None))],
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


def _rewrite(
    body: list[ast.stmt],
    specs: list[_BlockSpec],
    annotated: dict[str, ast.expr],
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
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            rewritten.append(statement)  # nested definitions keep their own blocks (decorate them separately)
            continue
        for field_name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(statement, field_name, None)
            if not isinstance(children, list) or not children:
                continue
            loop_body = isinstance(statement, (ast.For, ast.AsyncFor, ast.While)) and field_name == "body"
            if field_name in ("handlers", "cases"):
                for child in children:
                    child.body = _rewrite(child.body, specs, annotated, in_loop=in_loop, is_async=is_async, filename=filename)
            else:
                setattr(
                    statement,
                    field_name,
                    _rewrite(children, specs, annotated, in_loop=in_loop or loop_body, is_async=is_async, filename=filename),
                )
        rewritten.append(statement)
    return rewritten


def _block_statements(
    literal: ast.Constant | ast.JoinedStr,
    statement: ast.stmt,
    specs: list[_BlockSpec],
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
    else:
        program = None
        static_text = "".join(part.value if isinstance(part, ast.Constant) else "\x00" for part in literal.values)
        reads, writes = scan_bindings(static_text)
        rendered = _escaping_interpolations(literal)
    index = len(specs)
    specs.append(_BlockSpec(program=program, reads=reads, writes=writes, line=line, in_loop=in_loop))
    call = f"{_RUNTIME}.{'run_async' if is_async else 'run'}({index}, locals(), ({''.join(f'{n}, ' for n in reads)}), None)"
    lines = [f"{_RESULT} = {'await ' if is_async else ''}{call}", f"if {_RESULT}.exception is not None: raise {_RESULT}.exception"]
    lines += [f"if {name!r} in {_RESULT}.values: {name} = {_RESULT}.values[{name!r}]" for name in writes]
    lines.append(f"if {_RESULT}.kind == 'return': return {_RESULT}.value")
    if in_loop:
        lines.append(f"if {_RESULT}.kind == 'break': break")
        lines.append(f"if {_RESULT}.kind == 'continue': continue")
    generated = ast.parse("\n".join(lines)).body
    first = generated[0]
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
                func=ast.Attribute(value=ast.Name(id=_RUNTIME, ctx=ast.Load()), attr="escape", ctx=ast.Load()),
                args=[ast.JoinedStr(values=[part])],
                keywords=[],
            )
            part = ast.FormattedValue(value=escaped, conversion=-1, format_spec=None)
        parts.append(part)
    return ast.copy_location(ast.JoinedStr(values=parts), literal)


# --- the runtime behind the generated code ----------------------------------------------------------


class _FunctionRuntime:
    """Turns a generated call (block index, locals, read values) into a frame and runs it."""

    def __init__(
        self, function: types.FunctionType, specs: list[_BlockSpec], annotated: dict[str, ast.expr], *, filename: str
    ) -> None:
        self.function = function
        self.specs = specs
        self.annotated = annotated
        self.filename = filename
        self.module = function.__module__
        self._types: tuple[dict[str, object], object] | None = None

    def _declared_types(self) -> tuple[dict[str, object], object]:
        if self._types is None:
            namespace = dict(self.function.__globals__)
            hints = _resolve_annotations(self.function)
            binding_types = {name: hint for name, hint in hints.items() if name != "return"}
            for name, annotation in self.annotated.items():
                try:
                    binding_types[name] = eval(compile(ast.Expression(annotation), self.filename, "eval"), namespace)  # noqa: S307
                except Exception:  # an annotation naming a local class cannot be evaluated here
                    binding_types.setdefault(name, object)
            self._types = (binding_types, hints.get("return", object))
        return self._types

    def _make_frame(self, spec: _BlockSpec, python_locals: dict[str, object], read_values: tuple[object, ...]) -> Frame:
        binding_types, return_type = self._declared_types()
        visible = {name: value for name, value in python_locals.items() if not name.startswith(_PRIVATE_PREFIX)}
        return Frame(
            python_locals=visible,
            python_globals=self.function.__globals__,
            read_values=dict(zip(spec.reads, read_values, strict=True)),
            in_loop=spec.in_loop,
            binding_types=binding_types,
            return_type=return_type,
            is_async=inspect.iscoroutinefunction(self.function),
            step_id=f"{self.module}:{spec.line}",
            filename=self.filename,
            line=spec.line,
        )

    escape = staticmethod(escape_bindings)

    def _program(self, spec: _BlockSpec, rendered: str | None) -> Program:
        if spec.program is not None:
            return spec.program
        program = parse_program(strip_sentinel(rendered or "") or "", filename=self.filename, line=spec.line + 1)
        extra = sorted((set(program.reads) - set(spec.reads)) | (set(program.writes) - set(spec.writes)))
        if extra:
            raise NaturalParseError(
                f"binding(s) {extra} are built by interpolation; write `<name>` and `<:name>` literally in the f-string",
                filename=self.filename,
                line=spec.line,
            )
        return program

    def run(self, index: int, python_locals: dict[str, object], read_values: tuple[object, ...], rendered: str | None) -> BlockResult:
        spec = self.specs[index]
        return run_block(self._program(spec, rendered), self._make_frame(spec, python_locals, read_values))

    async def run_async(
        self, index: int, python_locals: dict[str, object], read_values: tuple[object, ...], rendered: str | None
    ) -> BlockResult:
        spec = self.specs[index]
        return await run_block_async(self._program(spec, rendered), self._make_frame(spec, python_locals, read_values))


def _resolve_annotations(function: types.FunctionType) -> dict[str, object]:
    """Annotations evaluated one by one, so one unresolvable name (a TYPE_CHECKING import) costs only itself."""
    try:
        return typing.get_type_hints(function)
    except Exception:
        pass
    resolved: dict[str, object] = {}
    for name, annotation in getattr(function, "__annotations__", {}).items():
        if not isinstance(annotation, str):
            resolved[name] = annotation
            continue
        try:
            resolved[name] = eval(annotation, dict(function.__globals__))  # noqa: S307 - the function's own annotation
        except Exception:  # an unresolvable annotation leaves that binding unconstrained
            continue
    return resolved
