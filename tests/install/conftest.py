"""The `install` marker: tests that build a fresh virtual environment and `pip install` the project into it."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "install: builds a fresh virtual environment and pip-installs the project (a few seconds; runs by default,"
        " deselect with -m 'not install')",
    )
