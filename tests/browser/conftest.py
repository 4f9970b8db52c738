"""The `browser` marker: tests that drive JupyterLab and static exports in a real (headless) Chromium."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "browser: starts JupyterLab on 127.0.0.1 and drives Debian's chromium with Python playwright (runs by"
        " default; skipped when chromium or playwright is missing unless NIGHTHAWK_REQUIRE_BROWSER=1)",
    )
