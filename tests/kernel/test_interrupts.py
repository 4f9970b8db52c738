"""In a live kernel, "Interrupt kernel" stops a block whatever it is doing: a slow expression, a blocking sync
tool, a sync scripted model. Afterwards the namespace is byte for byte what it was, no thread is left
running, and the next cell works.

Each interrupted cell would run for 45 s; the execution timeout (15 s) tells an interrupt that landed from
one that did not, without asserting how fast it was.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("jupyter_client")

from live import BASE_SETUP, Live, live_kernel  # noqa: E402

SETUP = BASE_SETUP + '''
total = "before"
data = {"rows": [1, 2, 3]}

@nighthawk.tool
def block(ctx) -> str:
    """Wait for something that never comes (45 s)."""
    time.sleep(45)
    return "done"

def digest() -> str:
    return hashlib.sha256(pickle.dumps((total, data))).hexdigest()

double_total = None
'''

HANG_LIMIT = 15.0


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with live_kernel(SETUP) as kernel:
        kernel.ok("%%natural\nASSIGN double_total = 2")  # start the runtime's threads before counting them
        yield kernel


def interrupted(live: Live, cell: str) -> None:
    """Run `cell`, interrupt it after 1.5 s, and check it stopped with nothing changed or left running."""
    live.ok("before_digest, before_threads = digest(), threading.active_count()")
    outcome = live.run(cell, interrupt_after=1.5, timeout=HANG_LIMIT)
    assert outcome.ename == "KeyboardInterrupt"
    assert live.ok("digest() == before_digest").result == "True"
    assert live.ok("threading.active_count() - before_threads").result == "0"
    assert live.ok("%%natural\nRETURN len(data['rows'])").result == "3"


def test_interrupt_stops_a_slow_expression(live: Live) -> None:
    interrupted(live, "%%natural\nASSIGN total = slow_count(45) or data['rows'].append(4)")


def test_interrupt_stops_a_blocking_sync_tool(live: Live) -> None:
    interrupted(live, "%%natural\nCALL block\nThen set <:total>.")


def test_interrupt_stops_a_sleeping_sync_scripted_model(live: Live) -> None:
    interrupted(live, "%%natural --model sleeper\nSet <:total> to 1.")


def test_interrupt_stops_a_natural_function_called_from_a_plain_cell(live: Live) -> None:
    live.ok(
        '@nighthawk.natural_function\ndef slow_total() -> int:\n    """natural\n    RETURN slow_count(45)\n    """\n'
    )
    interrupted(live, "total = slow_total()")


def test_five_interrupts_in_a_row_each_stop_their_cell(live: Live) -> None:
    for _ in range(5):
        interrupted(live, "%%natural\nASSIGN total = slow_count(45)")
