"""Shared test setup: no real model requests, scripted models, a clean runtime per test."""

from __future__ import annotations

import signal
import socket
import warnings
from collections.abc import Callable, Iterator

import pytest
from pydantic_ai import models

import nighthawk as nh
from nighthawk.prompting._tokens import NighthawkTokenizerWarning
from scripting import Script, scripted_executor

# Every real provider request raises during tests; FunctionModel and TestModel are exempt.
models.ALLOW_MODEL_REQUESTS = False

# Started as a background job (`nohup`, `&` in a script), this process begins with SIGINT ignored, and the
# tests that interrupt a step or a map (a real signal, or `_thread.interrupt_main`) would hang or fail: the
# suite runs with Python's own handler, as a terminal gives it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


_LOOPBACK = ("127.", "::1", "localhost")
_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else str(address)
    local = host in ("", b"") or str(host).startswith(_LOOPBACK)  # an empty host is this machine
    if self.family in (socket.AF_INET, socket.AF_INET6) and not local:
        raise OSError(f"test suite tried to reach {address!r}: tests must stay offline")
    _real_connect(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only loopback servers the suite starts itself are reachable; anything else fails loudly.
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)


@pytest.fixture(autouse=True)
def _offline_tokenizer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Tests run as on a user's machine, with no tokenizer setting: prompt budgets are always estimated, so no
    # step may try to load a vocabulary. Any attempt would hit the network guard and warn; make that fail.
    monkeypatch.delenv("NIGHTHAWK_TOKENIZER", raising=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=NighthawkTokenizerWarning)
        yield


@pytest.fixture(autouse=True)
def _no_default_executor() -> Iterator[None]:
    nh.set_default_step_executor(None)
    yield
    nh.set_default_step_executor(None)


@pytest.fixture
def fresh_session_store() -> Iterator[None]:
    """An empty in-session store of map results: no map in a test resumes what another test's map did."""
    from nighthawk.batch.store import session_store

    session_store().clear()
    yield
    session_store().clear()


@pytest.fixture
def scripted() -> Callable[..., tuple[nh.AgentStepExecutor, Script]]:
    """`scripted(round, round, ...)` -> (executor on a FunctionModel, the script)."""
    return scripted_executor
