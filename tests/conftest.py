"""Shared test setup: no real model requests, scripted models, a clean runtime per test."""

from __future__ import annotations

import socket
import warnings
from collections.abc import Callable, Iterator

import pytest
from pydantic_ai import models

import nighthawk as nh
from scripting import Script, scripted_executor

# Every real provider request raises during tests; FunctionModel and TestModel are exempt.
models.ALLOW_MODEL_REQUESTS = False


_LOOPBACK = ("127.", "::1", "localhost")
_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else str(address)
    if self.family in (socket.AF_INET, socket.AF_INET6) and not str(host).startswith(_LOOPBACK):
        raise OSError(f"test suite tried to reach {address!r}: tests must stay offline")
    _real_connect(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only loopback servers the suite starts itself are reachable; anything else fails loudly.
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)


@pytest.fixture(autouse=True)
def _offline_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    # Budgets are estimated in tests: loading tiktoken's vocabulary would try the network.
    monkeypatch.setenv("NIGHTHAWK_TOKENIZER", "estimate")
    warnings.filterwarnings("ignore", message="Could not load the tiktoken encoding")


@pytest.fixture(autouse=True)
def _no_default_executor() -> Iterator[None]:
    nh.set_default_step_executor(None)
    yield
    nh.set_default_step_executor(None)


@pytest.fixture
def scripted() -> Callable[..., tuple[nh.AgentStepExecutor, Script]]:
    """`scripted(round, round, ...)` -> (executor on a FunctionModel, the script)."""
    return scripted_executor
