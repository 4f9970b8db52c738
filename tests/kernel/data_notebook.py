"""A data notebook of the usual shape, cell by cell, and the prompt its `%%natural` cells send.

Used by the kernel tests and by bench/bench_notebook_prompt.py.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["DATA", "IMPORTS", "MORE", "first_request", "prompt_section"]

IMPORTS = """\
from collections import Counter, defaultdict, deque, OrderedDict, namedtuple, ChainMap
from itertools import chain, groupby, islice, product, combinations, permutations, accumulate, zip_longest, count, takewhile, dropwhile
from functools import partial, reduce, lru_cache, wraps, cache, cached_property, total_ordering
from typing import Any, Optional, Union, List, Dict, Tuple, Callable, Iterable
from math import sqrt, log, exp, ceil, floor, pi, inf
from pathlib import Path
import json, re, os
from json import dumps, loads
"""
"""The import lines at the top of most notebooks: 45 names."""

DATA = """\
import numpy as np
import pandas as pd
from dataclasses import dataclass

rng = np.random.default_rng(0)
sales = pd.DataFrame({
    "region": rng.choice(["north", "south", "east", "west"], 1000),
    "amount": rng.integers(10, 500, 1000).astype(float),
    "month": rng.integers(1, 13, 1000),
})
by_region = sales.groupby("region")["amount"].sum()
grid = rng.normal(size=(64, 32))
notes = [f"note {i}: call back customer {i % 37} about the order" for i in range(300)]
config = {"currency": "EUR", "threshold": 250.0, "regions": ["north", "south", "east", "west"]}

@dataclass
class Target:
    region: str
    goal: float

target = Target("north", 30000.0)

def share(part: float, whole: float) -> float:
    \"\"\"Fraction of a whole, rounded to three places.\"\"\"
    return round(part / whole, 3)
"""
"""The user's data: a 1,000-row DataFrame, a grouped Series, a 64x32 array, 300 notes, a config dict, a
dataclass and its instance, a helper function."""

MORE = """\
from random import random, randint, choice, shuffle, sample, uniform, gauss, expovariate, gammavariate, betavariate
from textwrap import fill, dedent, indent, shorten
from statistics import mean, median, stdev, pvariance
from datetime import date, datetime, timedelta
from operator import itemgetter, attrgetter
from string import ascii_letters, digits
import sys, time, math, itertools, collections

zsales = sales[sales["month"] == 12].copy()
year_total = float(sales["amount"].sum())
monthly = sales.groupby("month")["amount"].sum()
regions = sorted(config["regions"])
threshold = config["threshold"]
big = sales[sales["amount"] > threshold]
labels = {i: f"customer {i}" for i in range(37)}
sample_notes = notes[:5]
scale = 1.5
offsets = list(range(10))
"""
"""A longer notebook: 44 more names, most of them imported, and more data (`zsales` among it)."""


def first_request(shell: Any, program: str, line: str = "") -> tuple[str, str]:
    """Run `%%natural` with `program` on a model that records its first request and ends the step;
    return `(system prompt, user prompt)`."""
    import nighthawk_ipython

    seen: list[tuple[str, str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not seen:
            user = "".join(str(part.content) for part in messages[0].parts if part.part_kind == "user-prompt")
            seen.append((info.instructions or "", user))
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])

    nighthawk_ipython.configure(model=FunctionModel(model, model_name="recorder"), shell=shell)
    shell.run_cell_magic("natural", line, program)
    return seen[0]


def prompt_section(user_prompt: str, name: str) -> str:
    """The text between `<<<NH:NAME>>>` and `<<<NH:END_NAME>>>` of a user prompt; `""` when a cell's prompt
    leaves the section out (an empty GLOBALS)."""
    if f"<<<NH:{name}>>>" not in user_prompt:
        return ""
    start = user_prompt.index(f"<<<NH:{name}>>>") + len(f"<<<NH:{name}>>>")
    return user_prompt[start : user_prompt.index(f"<<<NH:END_{name}>>>")].strip("\n")


def locals_of(shell: Any, program: str) -> list[str]:
    """The LOCALS lines of the first request a `%%natural` cell with `program` sends."""
    _, user = first_request(shell, program, "--display none")
    return prompt_section(user, "LOCALS").splitlines()


def names_of(lines: list[str]) -> list[str]:
    """The name each summary line is about."""
    return [line.split(":", 1)[0] for line in lines]
