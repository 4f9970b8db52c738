"""In a live kernel, "Interrupt kernel" during the first cell's import of the provider's libraries gives the
notebook back within a second, with nothing changed, and the import completes behind it.

The kernel has not imported pydantic-ai's OpenAI model yet (no scripted model is loaded), and an import hook
makes that import last 8 s, so the interrupt surely lands during it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

pytest.importorskip("jupyter_client")

from live import Live, live_kernel  # noqa: E402

SETUP = '''
import importlib.abc, sys, time


class SlowImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "pydantic_ai.models.openai":  # the provider's model module, imported by the first step
            time.sleep(8)
        return None


sys.meta_path.insert(0, SlowImport())
%load_ext nighthawk
%nighthawk model openai-chat:gpt-test
%nighthawk display none
total = "before"
'''

INTERRUPT_AFTER = 1.5


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}  # never reached
    with live_kernel(SETUP, env=env) as kernel:
        yield kernel


def test_interrupt_during_the_first_cells_provider_import_returns_within_a_second(live: Live) -> None:
    assert live.ok("'pydantic_ai.models.openai' in sys.modules").result == "False"
    started = time.monotonic()
    outcome = live.run("%%natural\nSet <:total> to 1.", interrupt_after=INTERRUPT_AFTER, timeout=30)
    elapsed = time.monotonic() - started
    assert outcome.ename == "KeyboardInterrupt"
    assert elapsed < INTERRUPT_AFTER + 1.0, f"the cell ended {elapsed - INTERRUPT_AFTER:.1f} s after the interrupt"
    assert live.ok("total").result == "'before'"
    # The import went on to its end: importing waits for it, then finds the module whole.
    assert live.ok("import pydantic_ai.models.openai as m; hasattr(m, 'OpenAIChatModel')").result == "True"
