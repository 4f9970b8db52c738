"""The function door: `@nighthawk.natural_function` compiles a function's Natural blocks once.

At decoration the function's source is parsed and every Natural block statement is replaced by a call into
the runner followed by plain Python: the commit of write bindings (ordinary assignments, so they become
real locals) and the control flow the outcome asks for (`return`, `break`, `continue`, `raise`). The new
code object keeps the original file name and line numbers and the original closure cells. The rewrite and
its compilation are in `program._rewrite`; here is when it happens (once per function and enclosing code) and the
runtime the generated code calls.
"""

from __future__ import annotations

import ast
import collections.abc
import inspect
import sys
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import NaturalParseError
from ..program._rewrite import PRIVATE_PREFIX, RUNTIME, BlockSpec, build_code, read_late, rewrite_body
from ..program._source import KeptSource, function_source
from ..program.block import Program, escape_bindings, parse_program, strip_sentinel, unresolved_read
from ..program.frame import Frame
from ..step._validation import resolve_annotation

if TYPE_CHECKING:
    from .runner import BlockResult

__all__ = ["natural_function"]

F = TypeVar("F", bound=Callable[..., Any])


def natural_function(function: F) -> F:
    """Compile the Natural blocks of `function`; they run each time it is called.

    Works on sync and async functions, methods, static and class methods, closures, nested natural
    functions and functions defined in notebook cells. The source must be available to `inspect`.

    Raises:
        NaturalParseError: The source is unavailable or a block is malformed.
    """
    frame = sys._getframe(1)
    # Only a function frame is an enclosing scope in Python; a class body or a module is not.
    enclosing = frame if frame.f_code.co_flags & inspect.CO_OPTIMIZED else None
    if isinstance(function, (staticmethod, classmethod)):
        return type(function)(_decorate(function.__func__, enclosing))  # type: ignore[return-value]
    return _decorate(function, enclosing)  # type: ignore[return-value]


def _decorate(function: object, enclosing: types.FrameType | None) -> types.FunctionType:
    if not inspect.isfunction(function):
        raise NaturalParseError(f"`@natural_function` needs a function, got {type(function).__name__}")
    if hasattr(function, "__wrapped__"):
        raise NaturalParseError(
            f"{function.__qualname__!r} is already wrapped by another decorator; put `@natural_function` "
            "directly above the `def` (innermost), other decorators above it"
        )
    if inspect.isasyncgenfunction(function):
        raise NaturalParseError(f"{function.__qualname__!r} is an async generator; Natural blocks cannot run in one")
    return _compile(function, enclosing)


@dataclass(frozen=True, kw_only=True)
class _Compiled:
    """What compiling a function's blocks yields; it depends only on its code and the enclosing function's."""

    specs: list[BlockSpec]
    annotated: dict[str, ast.expr]
    code: types.CodeType
    reads_late: bool
    """Whether some read binding is taken from the enclosing frame when the block runs."""
    source: str
    """The function's source as read at decoration: what `nighthawk.map` compiles its twin from, so no file
    is read again (a function sent to another process by value has none there)."""


# A nested def with blocks is decorated each time its enclosing function runs: parse and compile it once.
_COMPILED: weakref.WeakKeyDictionary[types.CodeType, dict[types.CodeType | None, _Compiled | None]] = (
    weakref.WeakKeyDictionary()
)


def _compile(function: types.FunctionType, enclosing: types.FrameType | None) -> types.FunctionType:
    code = function.__code__
    enclosing_code = enclosing.f_code if enclosing is not None else None
    by_enclosing = _COMPILED.setdefault(code, {})
    if enclosing_code not in by_enclosing:
        by_enclosing[enclosing_code] = _compile_blocks(function, enclosing)
    compiled_blocks = by_enclosing[enclosing_code]
    if compiled_blocks is None:
        return function

    enclosing_locals: Mapping[str, object] = enclosing.f_locals if enclosing is not None else {}
    runtime = _FunctionRuntime(
        function,
        compiled_blocks.specs,
        compiled_blocks.annotated,
        filename=code.co_filename,
        enclosing_types=_enclosing_types(function, compiled_blocks.annotated, enclosing_locals),
        enclosing=enclosing if compiled_blocks.reads_late else None,  # else: do not keep the frame alive
        source=compiled_blocks.source,
    )
    cells = {name: cell for name, cell in zip(code.co_freevars, function.__closure__ or (), strict=True)}
    cells[RUNTIME] = types.CellType(runtime)
    new_code = compiled_blocks.code
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


def _compile_blocks(
    function: types.FunctionType,
    enclosing: types.FrameType | None,
    *,
    as_coroutine: bool = False,
    source: str | None = None,
) -> _Compiled | None:
    """Rewrite and compile `function`'s blocks; `None` when it has none (nor nested natural functions).

    `as_coroutine` compiles a sync function as an `async def` awaiting its blocks (what `nighthawk.map`
    drives to overlap many calls on one thread), from `source` as kept at decoration."""
    code = function.__code__
    filename = code.co_filename
    if source is None:
        source = function_source(function, _kept_by(enclosing))
    tree = ast.parse(source)
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != function.__name__:
        raise NaturalParseError(f"cannot find the definition of {function.__qualname__!r} in its source", filename=filename)
    ast.increment_lineno(tree, code.co_firstlineno - node.lineno if not node.decorator_list else code.co_firstlineno - node.decorator_list[0].lineno)
    node.decorator_list = []
    if as_coroutine and isinstance(node, ast.FunctionDef):
        node = ast.copy_location(ast.AsyncFunctionDef(**{name: getattr(node, name) for name in node._fields}), node)
    is_async = isinstance(node, ast.AsyncFunctionDef)
    specs: list[BlockSpec] = []
    annotated: dict[str, ast.expr] = {}
    nested: list[str] = []
    node.body = rewrite_body(node.body, specs, annotated, nested, in_loop=False, is_async=is_async, filename=filename)
    if not specs and not nested:
        return None
    free_names = [*code.co_freevars, RUNTIME]
    read_names = {name for spec in specs for name in spec.reads}
    new_code = build_code(node, function, filename, free_names)
    # A read binding of an enclosing-function variable the body never mentions has no closure cell (Python
    # compiled it as a global lookup); read it from the enclosing frame when the block runs instead.
    late = {name for name in new_code.co_names if name in read_names and name not in free_names and name in _variables(enclosing)}
    if late:
        read_late(node, late)
        new_code = build_code(node, function, filename, free_names)
    return _Compiled(specs=specs, annotated=annotated, code=new_code, reads_late=bool(late), source=source)


def _kept_by(frame: types.FrameType | None) -> KeptSource | None:
    """What an enclosing natural function kept of its source (its runtime is a free variable of its frame)."""
    runtime = frame.f_locals.get(RUNTIME) if frame is not None else None
    return None if runtime is None else KeptSource(runtime.source, runtime.first_line)


def _variables(frame: types.FrameType | None) -> frozenset[str]:
    """The local variables of an enclosing function frame (assigned or not yet)."""
    if frame is None:
        return frozenset()
    code = frame.f_code
    return frozenset((*code.co_varnames, *code.co_cellvars, *code.co_freevars))


# --- the runtime behind the generated code ----------------------------------------------------------


class _FunctionRuntime:
    """Turns a generated call (block index, locals, read values) into a frame and runs it."""

    def __init__(
        self,
        function: types.FunctionType,
        specs: list[BlockSpec],
        annotated: dict[str, ast.expr],
        *,
        filename: str,
        enclosing_types: Mapping[str, object],
        enclosing: types.FrameType | None,
        source: str,
    ) -> None:
        self.function = function
        self.source = source
        self.first_line = function.__code__.co_firstlineno
        """The file line of the source's first line."""
        self.parameters = _parameters(function.__code__)
        self.enclosing_types = enclosing_types
        self.enclosing = enclosing
        self.specs = specs
        self.annotated = annotated
        self.filename = filename
        self.module = function.__module__
        self._types: tuple[dict[str, object], object] | None = None

    def _declared_types(self) -> tuple[dict[str, object], object]:
        if self._types is None:
            namespace = {**_annotation_namespace(self.function), **self.enclosing_types}
            hints = _resolve_annotations(self.function, namespace)
            binding_types = {name: hint for name, hint in hints.items() if name != "return"}
            for name, annotation in self.annotated.items():
                try:
                    evaluated = eval(compile(ast.Expression(annotation), self.filename, "eval"), namespace)  # noqa: S307
                    binding_types[name] = resolve_annotation(evaluated, namespace)  # `c: "Cat"`, `Optional["Cat"]`
                except Exception:  # an annotation naming a local class cannot be evaluated here
                    binding_types.setdefault(name, object)
            self._types = (binding_types, _returned_type(self.function, hints.get("return", object)))
        return self._types

    def _make_frame(self, spec: BlockSpec, python_locals: dict[str, object], read_values: tuple[object, ...]) -> Frame:
        binding_types, return_type = self._declared_types()
        visible = {name: value for name, value in python_locals.items() if not name.startswith(PRIVATE_PREFIX)}
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
            parameters=self.parameters,
        )

    escape = staticmethod(escape_bindings)
    nested = staticmethod(natural_function)

    def unresolved(self, error: NameError, index: int, python_locals: Mapping[str, object]) -> NameError:
        """`error`, raised reading block `index`'s bindings, with a hint naming the binding and why it failed."""
        code = self.function.__code__
        variables = {*code.co_varnames, *code.co_cellvars, *code.co_freevars, *_variables(self.enclosing)}
        return unresolved_read(error, self.specs[index].reads, python_locals, variables)

    def outer(self, name: str) -> object:
        """The current value of an enclosing-function variable named by a read binding.

        Raises:
            NameError: The enclosing function has not assigned it (yet), as Python says for a free variable.
        """
        assert self.enclosing is not None  # only generated for names of an enclosing frame
        try:
            return self.enclosing.f_locals[name]
        except KeyError:
            raise NameError(
                f"cannot access free variable {name!r} where it is not associated with a value in enclosing scope",
                name=name,
            ) from None

    def _program(self, spec: BlockSpec, rendered: str | None) -> Program:
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
        return replace(program, interpolated=spec.fields)

    def run(self, index: int, python_locals: dict[str, object], read_values: tuple[object, ...], rendered: str | None) -> BlockResult:
        # Here, not at the top: decorating a function parses it only; the road of a step (the deadline
        # watchdog with queue and signal, secret collection with base64, rendering with datetime, decimal and
        # pathlib) is imported with its first block, so `import nighthawk` stays free of it.
        from .runner import run_block

        spec = self.specs[index]
        return run_block(self._program(spec, rendered), self._make_frame(spec, python_locals, read_values))

    async def run_async(
        self, index: int, python_locals: dict[str, object], read_values: tuple[object, ...], rendered: str | None
    ) -> BlockResult:
        from .runner import run_block_async  # here for the reason given in `run`

        spec = self.specs[index]
        return await run_block_async(self._program(spec, rendered), self._make_frame(spec, python_locals, read_values))


def _parameters(code: types.CodeType) -> tuple[str, ...]:
    """The parameters of a function's code, in order (`*args` and `**kwargs` included)."""
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[:count]


def _returned_type(function: types.FunctionType, annotation: object) -> object:
    """What a `return` outcome must produce: a generator's annotation (`Iterator[int]`) describes what it
    yields, and its `return` only ends it (`Generator[Y, S, R]` names the returned type as `R`)."""
    if not inspect.isgeneratorfunction(function):
        return annotation
    arguments = typing.get_args(annotation)
    if typing.get_origin(annotation) is collections.abc.Generator and len(arguments) == 3:
        return arguments[2]
    return object


def _enclosing_types(
    function: types.FunctionType, annotated: Mapping[str, ast.expr], enclosing_locals: Mapping[str, object]
) -> dict[str, object]:
    """Enclosing-function variables that the function's annotations name (a class defined next to it).

    Postponed annotations (`from __future__ import annotations`) are never closed over, so only the
    names they mention are kept from the enclosing scope, not the whole scope.
    """
    if not enclosing_locals:
        return {}
    expressions: list[ast.AST] = list(annotated.values())
    for annotation in getattr(function, "__annotations__", {}).values():
        if isinstance(annotation, str):
            try:
                expressions.append(ast.parse(annotation, mode="eval"))
            except SyntaxError:
                continue
    names = {node.id for expression in expressions for node in ast.walk(expression) if isinstance(node, ast.Name)}
    return {name: enclosing_locals[name] for name in names if name in enclosing_locals}


def _annotation_namespace(function: types.FunctionType) -> dict[str, object]:
    """Where the function's annotations are evaluated: its module globals, then the enclosing function's
    variables it closes over (a class defined in the enclosing function, under `from __future__ import
    annotations`)."""
    namespace = dict(function.__globals__)
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or (), strict=True):
        try:
            namespace[name] = cell.cell_contents
        except ValueError:  # an empty cell: the enclosing variable is not assigned yet
            continue
    return namespace


def _resolve_annotations(function: types.FunctionType, namespace: dict[str, object]) -> dict[str, object]:
    """Annotations evaluated one by one, so one unresolvable name (a TYPE_CHECKING import) costs only itself."""
    try:
        return typing.get_type_hints(function, globalns=namespace, include_extras=True)
    except Exception:
        pass
    resolved: dict[str, object] = {}
    for name, annotation in getattr(function, "__annotations__", {}).items():
        try:
            resolved[name] = resolve_annotation(annotation, namespace)
        except Exception:  # an unresolvable annotation leaves that binding unconstrained
            continue
    return resolved
