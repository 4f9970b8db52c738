"""Executors and scopes whose model is a `ReplayModel`: how a notebook or a `with` block turns replay on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from pydantic_ai.models import Model

from ..configuration import StepExecutorConfiguration
from ..errors import NighthawkError
from ..model.executor import AgentStepExecutor
from ..road.runtime import get_step_executor, scope
from ._mode import ReplayMode
from ._model import ReplayModel
from ._store import ReplayStore

__all__ = ["replay_executor", "replaying"]


def replay_executor(
    store: ReplayStore | str | os.PathLike[str],
    mode: ReplayMode | None = None,
    *,
    model: Model | str | None = None,
    configuration: StepExecutorConfiguration | None = None,
) -> AgentStepExecutor:
    """An agent executor whose model is a `ReplayModel` over `store`.

    In a notebook, pass it to `nighthawk.set_default_step_executor`; around a block of code, use
    `replaying(...)` instead.

    Args:
        store: A `ReplayStore` or the path of its file.
        mode: `replay`, `record` or `auto` (see `ReplayModel`); `None` reads `NIGHTHAWK_REPLAY_MODE`.
        model: The model to record from; defaults to `configuration.model` (never built in `replay` mode).
        configuration: Everything else about the executor; defaults to `StepExecutorConfiguration()`.
    """
    configuration = configuration or StepExecutorConfiguration()
    wrapped = model if model is not None else configuration.model
    if isinstance(wrapped, ReplayModel):  # replaying inside a replaying scope: wrap what it wraps
        wrapped = wrapped._spec
    replay_model = ReplayModel(wrapped, store, mode)
    return AgentStepExecutor.from_configuration(configuration=replace(configuration, model=replay_model))


@contextmanager
def replaying(
    store: ReplayStore | str | os.PathLike[str], mode: ReplayMode | None = None, *, model: Model | str | None = None
) -> Iterator[AgentStepExecutor]:
    """Run the blocks inside the `with` statement against `store`, in a nested scope.

    The executor in force keeps its configuration and only its model is wrapped; with no executor in force, a
    default `AgentStepExecutor` configuration is used.

    Args:
        store: A `ReplayStore` or the path of its file.
        mode: `replay`, `record` or `auto` (see `ReplayModel`); `None` reads `NIGHTHAWK_REPLAY_MODE`.
        model: The model to record from; defaults to the model of the executor in force.

    Yields:
        The executor used inside the scope.

    Raises:
        NighthawkError: The executor in force has no configuration to take a model from (a scripted one).
    """
    try:
        current: object = get_step_executor()
    except NighthawkError:
        current = None
    configuration = getattr(current, "configuration", None) if current is not None else StepExecutorConfiguration()
    if not isinstance(configuration, StepExecutorConfiguration):
        raise NighthawkError(
            f"cannot replay with the executor in force, {current!r}, which has no model to wrap; use "
            "`nighthawk.run(nighthawk.replay.replay_executor(path))` instead"
        )
    executor = replay_executor(store, mode, model=model, configuration=configuration)
    with scope(step_executor=executor):
        yield executor
