"""`nighthawk.ray.map_batches`: one natural function over a Ray dataset, on a pool of actors.

Each actor makes its executor once, from a factory run inside the actor (API keys, HTTP clients and models
are made where they are used, never pickled), then maps every batch it gets with a local `nighthawk.map`,
so `concurrency` rows of a batch wait for the model at once. The function reaches the actors by value
(cloudpickle): its Natural program and the source its map twin is compiled from were kept when it was
decorated, so a function from a notebook cell or a `__main__` script runs there without any file to read
(as do the natural functions defined inside it, cut from that source).

A `store` file is shared by the actors (each finished row is its own transaction, so none is lost), and
budget groups in force when the dataset is made are shared with them through a ledger actor (`batch/ray_budget.py`).

Imported only when used: `import nighthawk` never imports Ray.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any, Literal

try:
    import ray.data
    from ray.data.dataset import MaterializedDataset
except ModuleNotFoundError as _missing:  # ray itself, or on Python 3.13 the typing_extensions it imports
    raise ModuleNotFoundError(
        f"`nighthawk.ray` needs Ray Data, which cannot be imported here ({_missing}): install it with "
        '`pip install "nighthawk-jupyter[ray]"`',
        name=_missing.name,
    ) from _missing

import numpy as np

from .batch import MapResult, map_reporting_items
from .batch.ray_budget import cluster_allowances
from .batch.store import DiskStore, return_type
from .budget import SharedAllowance, UsageTotals, shared_budget
from .errors import BudgetExceededError, MapItemError, NighthawkError
from .model.executor import StepExecutor
from .oversight._kinds import Oversight, combine
from .oversight._oversee import in_force, overseeing
from .road.runtime import run

__all__ = ["map_batches"]

_ACTOR_CPUS = 0.5
"""What each actor reserves: it mostly waits for the model. Whole CPUs would also starve the dataset's own
read tasks on a small machine (two one-CPU actors on two CPUs hang a `ray.data.range` pipeline)."""

_ROWS_PER_SLOT = 16
"""Default batch size per item in flight: enough that the tail of a batch, where fewer items are in flight,
costs little, and small enough that a few hundred rows still spread over the actors."""


def map_batches(
    dataset: ray.data.Dataset,
    function: Callable[..., Any],
    *,
    input_columns: Sequence[str],
    output_column: str,
    executor: Callable[[], StepExecutor],
    actors: int = 2,
    concurrency: int = 8,
    on_error: Literal["raise", "collect"] = "raise",
    retries: int = 0,
    store: str | os.PathLike[str] | None = None,
    batch_size: int | None = None,
) -> ray.data.Dataset:
    """Call `function` on every row of `dataset` on `actors` Ray actors; the rows come back with its results.

    Lazy, as Ray datasets are: nothing runs until the dataset is consumed (`take_all`, `to_pandas`,
    `write_parquet`, ...). The budget groups in force when it is made (`with nighthawk.budget(...)`, a
    notebook's cell budget) bound it wherever it runs: every request of every actor is first counted in
    them, so their request limits hold over the whole cluster.

    Args:
        dataset: The rows to map.
        function: A natural function (sync or async) or a callable calling them; one parameter per input
            column. It is sent to the actors by value, as are the globals it names.
        input_columns: The columns passed to `function`, in the order of its parameters.
        output_column: Where the results go. Beside it, per row: `<output_column>_requests`,
            `_input_tokens`, `_output_tokens` and `_cost_usd` (`None` for a model without a price), and with
            `on_error="collect"` `_error` (the failure's message, `None` for a row that succeeded).
        executor: A function without arguments that makes the step executor; each actor calls it once.
        actors: Actors mapping batches at once (each holds one executor).
        concurrency: Rows of a batch in flight at once, in each actor.
        on_error: `"raise"` stops the dataset at the first failed row or at the budget; `"collect"` keeps
            going and leaves `None` in the output column and the message in the error column, also for the
            rows a budget stopped before they ran.
        retries: Runs again a row whose call failed (not one a budget stopped) up to this many times, as
            `nighthawk.map` does.
        store: A sqlite file every actor keeps finished rows in (the store of `nighthawk.map`: same keys,
            same file); rows already there are not run again. On a cluster of several machines it must be
            on a file system they share.
        batch_size: Rows per batch (at most); by default 16 times `concurrency`.

    Raises:
        TypeError: An argument has the wrong kind (`executor` must make the executor, not be one).
        ValueError: A number is out of range or `on_error` is unknown.
        NighthawkError: `store` cannot be opened.
    """
    _check(input_columns=input_columns, output_column=output_column, executor=executor, actors=actors, on_error=on_error)
    _whole("concurrency", concurrency)
    _whole("retries", retries, least=0)
    if batch_size is not None:
        _whole("batch_size", batch_size)
    if store is not None:
        store = os.path.abspath(store)  # the actors' working folder is not this one
        DiskStore(store, return_type(function)).close()  # a path that cannot be a store fails here, not on an actor
    return _spread(dataset, actors).map_batches(
        _Rows,
        fn_constructor_kwargs={
            "function": function,
            "executor": executor,
            "input_columns": tuple(input_columns),
            "output_column": output_column,
            "concurrency": concurrency,
            "on_error": on_error,
            "retries": retries,
            "store": store,
            "budgets": cluster_allowances(),
            # The hooks go with the rows (by value, as the function does), so no row escapes them on an actor.
            "oversight": combine(*oversights) if (oversights := in_force()) else None,
        },
        batch_format="numpy",
        batch_size=batch_size or _ROWS_PER_SLOT * concurrency,
        # One batch at a time per actor: a batch queued at a busy actor would wait there while another is free.
        compute=ray.data.ActorPoolStrategy(size=actors, max_tasks_in_flight_per_actor=1),
        num_cpus=_ACTOR_CPUS,
    )


def _spread(dataset: ray.data.Dataset, actors: int) -> ray.data.Dataset:
    """`dataset` in at least two blocks per actor, when it is materialised in fewer.

    A block goes to one actor whole, so `ray.data.from_pandas(df)` (one block) would keep all but one actor
    idle. A materialised dataset (`from_pandas`, `from_items`, `materialize()`) knows its blocks and rows at
    no cost, and splitting it moves no data through a shuffle; a lazy one is left as it is (counting its
    blocks would run it), which docs/batch.md says.
    """
    if not isinstance(dataset, MaterializedDataset):
        return dataset
    wanted = min(2 * actors, dataset.count())
    return dataset.repartition(wanted) if dataset.num_blocks() < wanted else dataset


class _Rows:
    """One actor: its executor, made once; a local map for each batch."""

    def __init__(
        self,
        *,
        function: Callable[..., Any],
        executor: Callable[[], StepExecutor],
        input_columns: tuple[str, ...],
        output_column: str,
        concurrency: int,
        on_error: Literal["raise", "collect"],
        retries: int,
        store: str | None,
        budgets: tuple[SharedAllowance, ...],
        oversight: Oversight | None,
    ) -> None:
        self.function = function
        self.executor = executor()
        self.input_columns = input_columns
        self.output_column = output_column
        self.concurrency = concurrency
        self.on_error = on_error
        self.retries = retries
        self.store = store
        self.budgets = budgets
        self.oversight = oversight

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        missing = [name for name in self.input_columns if name not in batch]
        if missing:
            raise KeyError(f"`input_columns` names {missing!r}, which the dataset does not have; it has {sorted(batch)!r}")
        columns = [batch[name].tolist() for name in self.input_columns]  # numpy scalars become Python values
        count = len(columns[0])
        spent: dict[int, UsageTotals] = {}  # each row that ended (done or failed), with what it spent
        stopped: BudgetExceededError | None = None
        try:
            with run(self.executor), overseeing(self.oversight), ExitStack() as groups:
                for allowance in self.budgets:
                    groups.enter_context(shared_budget(allowance))
                results = map_reporting_items(
                    self.function,
                    tuple(columns),
                    concurrency=self.concurrency,
                    on_error=self.on_error,
                    retries=self.retries,
                    store=self.store,
                    progress=False,
                    item_usage=spent.__setitem__,
                )
        except BudgetExceededError as exc:
            if self.on_error == "raise":
                kept = "the rows finished before it are kept in `store`" if self.store else "set `store=` to keep finished rows"
                raise NighthawkError(
                    f"the dataset stopped at its budget: {_message(exc)} ({kept}; with `on_error=\"collect\"` the "
                    f"dataset ends with the rows it stopped marked in the `{self.output_column}_error` column)"
                ) from None
            stopped = exc
            results = exc.partial if isinstance(exc.partial, MapResult) else MapResult()
        except MapItemError as exc:
            row = {name: column[exc.index] for name, column in zip(self.input_columns, columns, strict=True)}
            # Ray re-raises this on the caller, by value: a plain message travels where the map's error (which
            # holds the partial results) would not.
            raise NighthawkError(
                f"the row {_short(row)} failed: {_message(exc.__cause__)}. The dataset stopped; set `on_error=\"collect\"` "
                f"to map the other rows and find each failure in the `{self.output_column}_error` column"
            ) from None
        out = dict(batch)
        out[self.output_column] = _objects(results[index] if index in spent else None for index in range(count))
        if self.on_error == "collect":
            # A row that did not end was stopped by the budget before it ran (or while it ran).
            errors = {index: stopped for index in range(count) if index not in spent} | results.errors
            out[f"{self.output_column}_error"] = _objects(
                None if (error := errors.get(index)) is None else _message(error) for index in range(count)
            )
        rows = [spent.get(index, UsageTotals()) for index in range(count)]
        out[f"{self.output_column}_requests"] = np.array([usage.requests for usage in rows], dtype=np.int64)
        out[f"{self.output_column}_input_tokens"] = np.array([usage.input_tokens for usage in rows], dtype=np.int64)
        out[f"{self.output_column}_output_tokens"] = np.array([usage.output_tokens for usage in rows], dtype=np.int64)
        out[f"{self.output_column}_cost_usd"] = _objects(
            None if usage.unpriced_requests else usage.priced_cost_usd for usage in rows
        )
        return out


def _objects(values: Any) -> np.ndarray:
    """A one-dimensional object column: `np.array` would turn a list of lists into a matrix."""
    items = list(values)
    column = np.empty(len(items), dtype=object)
    for index, value in enumerate(items):
        column[index] = value
    return column


def _message(error: BaseException | None) -> str:
    return f"{type(error).__name__}: {error}"


def _short(row: dict[str, object]) -> str:
    text = repr(row)
    return text if len(text) <= 200 else text[:197] + "..."


def _check(
    *, input_columns: Sequence[str], output_column: str, executor: object, actors: int, on_error: str
) -> None:
    if isinstance(input_columns, str) or not input_columns or not all(isinstance(name, str) for name in input_columns):
        raise TypeError(
            f"`input_columns` must be a list of column names, one per parameter of the function, got {input_columns!r}"
        )
    if not isinstance(output_column, str) or not output_column:
        raise TypeError(f"`output_column` must be a column name, got {output_column!r}")
    if not callable(executor) or hasattr(executor, "run_step"):
        raise TypeError(
            "`executor` must be a function without arguments that makes the step executor (each actor calls it "
            f"once, so API keys and clients are made there), got {executor!r}; wrap it: `executor=lambda: ...`"
        )
    _whole("actors", actors)
    if on_error not in ("raise", "collect"):
        raise ValueError(f'`on_error` must be "raise" or "collect", got {on_error!r}')


def _whole(name: str, value: object, *, least: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"`{name}` must be a whole number of at least {least}, got {value!r}")
