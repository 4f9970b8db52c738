"""A sync natural function as a coroutine whose only pauses are its Natural blocks.

One thread cannot hold many sync calls half-way through, yet a map must keep every item's Python on the
caller's thread while many items wait for the model. So a sync natural function gets a twin compiled from
the same source as an `async def`: its Python runs as it would, and each block, instead of running its
step, hands the step out (`StepRequest`) and pauses until the driver sends back the step's result. The
source is the text kept at decoration, never read again: a function sent by value to another process (a
Ray actor) has no file to read there, and one whose file changed since must twin what it runs. The
driver runs the steps' conversations on the background loop and resumes the twins on the caller's thread.
Prompts are those of a plain call (the frame says the function is sync), so replays and stores agree.
"""

from __future__ import annotations

import inspect
import types
import weakref
from collections.abc import Callable, Coroutine, Generator
from typing import Any

from ..program._rewrite import RUNTIME
from ..program.block import Program
from ..program.frame import Frame
from ..road.decorator import _compile_blocks, _FunctionRuntime
from ..road.runner import BlockResult, run_block_async

__all__ = ["StepRequest", "coroutine_twin", "natural_runtime"]


class StepRequest:
    """What a twin awaits at a block: the step to run; the driver sends back its `BlockResult`."""

    __slots__ = ("coroutine",)

    def __init__(self, coroutine: Coroutine[Any, Any, BlockResult]) -> None:
        self.coroutine = coroutine

    def __await__(self) -> Generator[StepRequest, BlockResult, BlockResult]:
        return (yield self)


class _DeferredRuntime:
    """The twin's stand-in for the function's runtime: same frames and programs, steps handed out."""

    def __init__(self, runtime: _FunctionRuntime) -> None:
        self._runtime = runtime

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)  # escape, unresolved, nested, outer: as the function has them

    def run_async(
        self, index: int, python_locals: dict[str, object], read_values: tuple[object, ...], rendered: str | None
    ) -> StepRequest:
        runtime = self._runtime
        spec = runtime.specs[index]
        # The frame is built here, on the caller's thread, as a plain call builds it before its step.
        program: Program = runtime._program(spec, rendered)
        frame: Frame = runtime._make_frame(spec, python_locals, read_values)
        return StepRequest(run_block_async(program, frame))


def natural_runtime(function: object) -> _FunctionRuntime | None:
    """The runtime behind a function made by `@natural_function` (blocks compiled), else `None`."""
    code = getattr(function, "__code__", None)
    if not isinstance(code, types.CodeType) or RUNTIME not in code.co_freevars:
        return None
    cell = function.__closure__[code.co_freevars.index(RUNTIME)]  # type: ignore[attr-defined]
    runtime = cell.cell_contents
    return runtime if isinstance(runtime, _FunctionRuntime) else None


_TWINS: weakref.WeakKeyDictionary[types.FunctionType, Callable[..., Coroutine[Any, Any, Any]]] = (
    weakref.WeakKeyDictionary()
)


def coroutine_twin(function: object) -> Callable[..., Coroutine[Any, Any, Any]] | None:
    """The twin of a sync natural function (a bound one keeps its `self`); `None` for anything else."""
    bound_self = getattr(function, "__self__", None) if inspect.ismethod(function) else None
    plain = function.__func__ if inspect.ismethod(function) else function  # type: ignore[attr-defined]
    runtime = natural_runtime(plain)
    if runtime is None or not isinstance(plain, types.FunctionType):
        return None
    original = plain.__wrapped__  # type: ignore[attr-defined]
    if inspect.iscoroutinefunction(original) or inspect.isgeneratorfunction(original):
        return None  # async ones are coroutines already; a generator's result is not its value
    twin = _TWINS.get(plain)
    if twin is None:
        twin = _build(plain, original, runtime)
        _TWINS[plain] = twin
    return twin if bound_self is None else types.MethodType(twin, bound_self)


def _build(
    compiled: types.FunctionType, original: types.FunctionType, runtime: _FunctionRuntime
) -> Callable[..., Coroutine[Any, Any, Any]]:
    blocks = _compile_blocks(original, runtime.enclosing, as_coroutine=True, source=runtime.source)
    assert blocks is not None  # the function has blocks: it was compiled from the same source
    cells = dict(zip(compiled.__code__.co_freevars, compiled.__closure__ or (), strict=True))
    cells[RUNTIME] = types.CellType(_DeferredRuntime(runtime))
    closure = tuple(cells[name] for name in blocks.code.co_freevars)
    twin = types.FunctionType(blocks.code, compiled.__globals__, compiled.__name__, compiled.__defaults__, closure)
    twin.__kwdefaults__ = compiled.__kwdefaults__
    twin.__qualname__ = compiled.__qualname__
    return twin
