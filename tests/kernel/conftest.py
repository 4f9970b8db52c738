"""Shared fixtures for the kernel extension tests: one InteractiveShell with the extension loaded."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("IPython")

import pydantic_ai.models
from IPython.core.interactiveshell import InteractiveShell

# The helpers module next to this file (`kernel_scripts`) is imported by name from the tests.
sys.path.insert(0, str(Path(__file__).parent))

# No test may reach a real provider; scripted models are exempt.
pydantic_ai.models.ALLOW_MODEL_REQUESTS = False


def pytest_configure(config: pytest.Config) -> None:
    # Offline, tiktoken cannot fetch its vocabulary; the core then estimates token counts and warns once.
    config.addinivalue_line("filterwarnings", "ignore::nighthawk.prompting._tokens.NighthawkTokenizerWarning")


@pytest.fixture(scope="session")
def ip() -> InteractiveShell:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "nighthawk")
    return shell


@pytest.fixture
def shell(ip: InteractiveShell) -> Iterator[InteractiveShell]:
    """The shared shell, with the namespace and the settings restored after each test."""
    import nighthawk_ipython

    before = dict(ip.user_ns)
    settings = nighthawk_ipython.configure(shell=ip)
    saved = (settings.model, settings.model_object, settings.display, dict(settings.limits), dict(settings.budgets))
    settings.display = "html"
    yield ip
    for name in list(ip.user_ns):
        if name not in before:
            del ip.user_ns[name]
    ip.user_ns.update(before)
    ip.user_ns.get("__annotations__", {}).clear()
    settings.model, settings.display, settings.limits, settings.budgets = saved[0], saved[2], saved[3], saved[4]
    settings.model_object = saved[1]


@pytest.fixture
def use_model(shell: InteractiveShell) -> Callable[[Any], None]:
    """Make a scripted model the kernel's model."""
    import nighthawk_ipython

    def use(model: Any) -> None:
        nighthawk_ipython.configure(model=model, shell=shell)

    return use


@pytest.fixture
def empty_notebook(shell: InteractiveShell) -> InteractiveShell:
    """The shared shell with nothing of the user's in its namespace: it keeps what earlier test modules left,
    and the `shell` fixture puts that back afterwards."""
    for name in [name for name in shell.user_ns if name not in shell.user_ns_hidden]:
        del shell.user_ns[name]
    return shell
