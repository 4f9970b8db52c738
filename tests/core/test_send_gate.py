"""The send gate of a map's steps: first requests in turn, spaced by the loop's CPU time per request.

The spacing is booked from readings of the clock and of the loop thread's CPU time; here both are a fake
clock, so what is booked is exact. The waits at the gate run on a real loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from nighthawk.model import _send_gate
from nighthawk.threads._loop import _caller


class FakeClock:
    """`time.monotonic`, `time.thread_time` (the loop thread's CPU) and `time.process_time` as the gate
    reads them."""

    def __init__(self) -> None:
        self.now = 100.0
        self.cpu = 10.0
        self.process_cpu = 20.0


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(_send_gate.time, "monotonic", lambda: fake.now)
    monkeypatch.setattr(_send_gate.time, "thread_time", lambda: fake.cpu)
    monkeypatch.setattr(_send_gate.time, "process_time", lambda: fake.process_cpu)
    return fake


def send(
    gate: _send_gate._Gate, clock: FakeClock, *, cpu_s: float, after_s: float, first: bool = True, busy: float = 0.5
) -> None:
    """One request that cost the loop `cpu_s`, sent `after_s` after the previous one, the process busy
    `busy` of the time in between (as `requesting` reports it: the step's first request books the next)."""
    clock.now += after_s
    clock.cpu += cpu_s
    clock.process_cpu += busy * after_s
    if first:
        gate.sent_first()
    gate.sent()


def one_window(gate: _send_gate._Gate, clock: FakeClock, *, cpu_s: float = 0.004, busy: float = 0.5) -> None:
    """A window's worth of first requests, 10 ms apart, each costing the loop `cpu_s`."""
    for _ in range(_send_gate._WINDOW):
        send(gate, clock, cpu_s=cpu_s, after_s=0.010, busy=busy)


def warmed_up(clock: FakeClock, *, cpu_s: float = 0.004, busy: float = 0.5) -> _send_gate._Gate:
    """A gate past its first window (each request costing the loop `cpu_s`), its last request long ago."""
    gate = _send_gate._Gate(caller=object())
    one_window(gate, clock, cpu_s=cpu_s, busy=busy)
    send(gate, clock, cpu_s=cpu_s, after_s=0.010, busy=busy)  # closes the window: the spacing is read
    clock.now += 1.0
    return gate


def test_the_first_window_of_first_requests_is_not_spaced(clock: FakeClock) -> None:
    gate = _send_gate._Gate(caller=object())
    for _ in range(_send_gate._WINDOW):
        send(gate, clock, cpu_s=0.004, after_s=0.0)  # even sent all at once

        assert gate.next_first_request == clock.now


def test_after_a_window_first_requests_are_booked_the_loops_cpu_time_per_request_apart(clock: FakeClock) -> None:
    gate = warmed_up(clock)
    send(gate, clock, cpu_s=0.004, after_s=0.0)
    assert gate.next_first_request == clock.now  # after a pause: the next may go at once

    send(gate, clock, cpu_s=0.004, after_s=0.0)  # and does

    assert gate.next_first_request == pytest.approx(clock.now + 0.004)


def test_requests_after_the_first_of_a_step_count_towards_the_cpu_time_per_request(clock: FakeClock) -> None:
    gate = _send_gate._Gate(caller=object())
    for _ in range(_send_gate._WINDOW + 1):
        send(gate, clock, cpu_s=0.004, after_s=0.010)
        send(gate, clock, cpu_s=0.002, after_s=0.010, first=False)  # each step's second round

    assert gate.spacing == pytest.approx(0.003)


def test_a_step_that_sent_late_does_not_push_the_next_ones_back(clock: FakeClock) -> None:
    gate = warmed_up(clock)
    send(gate, clock, cpu_s=0.004, after_s=0.0)
    send(gate, clock, cpu_s=0.004, after_s=0.0)
    booked = gate.next_first_request

    # The loop was busy: this step sends 3 ms after its booked time.
    send(gate, clock, cpu_s=0.004, after_s=booked + 0.003 - clock.now)

    assert gate.next_first_request == pytest.approx(booked + 0.004)  # not 3 ms later


def test_a_map_bound_by_the_cpu_is_not_spaced(clock: FakeClock) -> None:
    gate = warmed_up(clock, busy=1.0)  # the process used a whole core while the window's requests went out

    assert gate.spacing == 0.0


def test_spacing_comes_back_once_the_process_has_cpu_time_to_spare(clock: FakeClock) -> None:
    gate = warmed_up(clock, busy=1.0)

    one_window(gate, clock, busy=0.5)

    assert gate.spacing == pytest.approx(0.004)


def test_dear_requests_early_in_a_map_do_not_hold_back_cheap_ones_after_them(clock: FakeClock) -> None:
    gate = warmed_up(clock, cpu_s=0.020)
    assert gate.spacing == pytest.approx(0.020)

    one_window(gate, clock, cpu_s=0.001)

    assert gate.spacing == pytest.approx(0.001)


def test_the_spacing_is_bounded_whatever_the_cpu_reading(clock: FakeClock) -> None:
    gate = warmed_up(clock, cpu_s=10.0)

    assert gate.spacing == _send_gate._MOST_SPACING_S


# --- the gate on a loop --------------------------------------------------------------------------------


def in_gated_context(body: Callable[[_send_gate._Gate], Awaitable[None]]) -> None:
    """Run `body(gate)` on a fresh loop, in a context whose steps take turns at `gate` (as a map's do)."""

    async def main() -> None:
        caller = object()
        _caller.set(caller)  # type: ignore[arg-type]  # the gate only compares it
        _send_gate.gate_steps(caller)
        gate = _send_gate._gate.get()
        assert gate is not None
        await body(gate)

    asyncio.run(main())


def test_a_step_waits_at_the_gate_until_its_booked_time() -> None:
    waited: list[float] = []

    async def body(gate: _send_gate._Gate) -> None:
        gate.waiting_for_model = 1  # another step's request is out: turns are taken
        gate.next_first_request = time.monotonic() + 0.05
        started = time.monotonic()
        async with _send_gate.passing_gate():
            waited.append(time.monotonic() - started)

    in_gated_context(body)

    assert waited[0] >= 0.049


def test_steps_pass_freely_while_no_request_waits_for_the_model() -> None:
    passed: list[bool] = []

    async def body(gate: _send_gate._Gate) -> None:
        gate.next_first_request = time.monotonic() + 60.0
        async with _send_gate.passing_gate():
            passed.append(not gate.lock.locked())

    in_gated_context(body)

    assert passed == [True]


def test_a_step_cancelled_while_it_waits_at_the_gate_lets_the_next_one_through() -> None:
    order: list[str] = []

    async def body(gate: _send_gate._Gate) -> None:
        gate.waiting_for_model = 1
        gate.next_first_request = time.monotonic() + 60.0

        async def step(name: str) -> None:
            async with _send_gate.passing_gate():
                order.append(name)

        first = asyncio.create_task(step("first"))
        await asyncio.sleep(0.01)  # `first` holds the gate, waiting for its booked time
        second = asyncio.create_task(step("second"))
        await asyncio.sleep(0.01)
        first.cancel()
        gate.next_first_request = 0.0
        await asyncio.wait_for(second, timeout=5.0)

    in_gated_context(body)

    assert order == ["second"]


def test_sending_a_first_request_books_the_next_one_a_spacing_later() -> None:
    booked: list[tuple[float, float]] = []

    async def body(gate: _send_gate._Gate) -> None:
        gate.waiting_for_model = 1
        gate.spacing = 0.03
        async with _send_gate.passing_gate():
            before = gate.next_first_request = time.monotonic()
            with _send_gate.requesting():
                booked.append((before, gate.next_first_request))

    in_gated_context(body)

    before, after = booked[0]
    assert after - before == pytest.approx(0.03)
