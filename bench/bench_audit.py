"""What the runtime guards' audit hook costs (`nh.oversight.read_only()`, `no_network()`).

Every `open` of a small file raises one audit event. Four ways of running 200,000 of them, each in a fresh
interpreter (an audit hook cannot be removed), interleaved round by round, medians printed:

- `bare`: no hook in the process (what a user who never used a runtime policy has);
- `hook idle`: the hook installed, no policy in force (user code between steps, other threads);
- `step, no policy`: inside a natural function's `nh_eval` that calls the loop, no policy in force;
- `step, read_only`: the same under `read_only()`: every `open` is checked (and let through: it reads).

Then the idle hook alone: one `sys.audit` event timed before and after installing it, in one fresh process.

Run: `PYTHONPATH=core python bench/bench_audit.py [--opens N] [--rounds R]`. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

VARIANTS = ("bare", "hook idle", "step, no policy", "step, read_only")

_CHILD = textwrap.dedent(
    """
    import sys, time
    variant, path, opens = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def loop():
        started = time.perf_counter()
        for _ in range(opens):
            open(path, "rb").close()
        return time.perf_counter() - started

    if variant == "bare":
        print(loop())
    elif variant == "hook idle":
        from nighthawk.oversight import _audit, _oversee
        _audit.install(_oversee._enforced, _oversee._by_thread)
        print(loop())
    else:
        import nighthawk as nh
        from nighthawk.testing import ScriptedExecutor, StepResponse

        @nh.natural_function
        def measure():
            elapsed = 0.0
            '''natural
            Set <:elapsed>.
            '''
            return elapsed

        policy = nh.oversight.read_only() if variant == "step, read_only" else None
        executor = ScriptedExecutor([StepResponse(assign={"elapsed": nh.testing.Expression("loop()")})])
        with nh.run(executor), nh.scope(oversight=policy):
            print(measure())
    """
)


_EVENT_CHILD = textwrap.dedent(
    """
    import sys, timeit
    def per_event():
        return min(timeit.repeat(lambda: sys.audit("nighthawk.bench", 1), number=200_000, repeat=7)) / 200_000 * 1e9
    before = per_event()
    from nighthawk.oversight import _audit, _oversee
    _audit.install(_oversee._enforced, _oversee._by_thread)
    print(before, per_event())
    """
)


def _environment() -> dict[str, str]:
    """This checkout's `core/` first on the children's path."""
    environment = dict(os.environ)
    core = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "core")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [core, environment.get("PYTHONPATH")]))
    return environment


def run(child: str, variant: str, path: str, opens: int) -> float:
    output = subprocess.run(
        [sys.executable, child, variant, path, str(opens)],
        check=True, capture_output=True, text=True, env=_environment(),
    ).stdout
    return float(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opens", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        small, child = os.path.join(directory, "small.txt"), os.path.join(directory, "child.py")
        with open(small, "w") as file:
            file.write("a small file\n")
        with open(child, "w") as file:  # a file, not `-c`: a natural function's source must be readable
            file.write(_CHILD)
        timings: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
        for _ in range(arguments.rounds):
            for variant in VARIANTS:  # interleaved: the machine's noise falls on every variant alike
                timings[variant].append(run(child, variant, small, arguments.opens))
    bare = statistics.median(timings["bare"])
    print(f"{arguments.opens:,} opens of a small file, median of {arguments.rounds} interleaved rounds (fresh process each)")
    for variant in VARIANTS:
        median = statistics.median(timings[variant])
        per_open = median / arguments.opens * 1e6
        extra = (median - bare) / arguments.opens * 1e6
        print(f"  {variant:<16} {median:7.3f} s   {per_open:6.2f} us/open   {median / bare:5.2f}x bare   {extra:+6.2f} us/open")
    output = subprocess.run([sys.executable, "-c", _EVENT_CHILD], check=True, capture_output=True, text=True, env=_environment())
    without, with_hook = map(float, output.stdout.split())
    print(f"one audit event: {without:.0f} ns without the hook, {with_hook:.0f} ns with it idle (+{with_hook - without:.0f} ns)")


if __name__ == "__main__":
    main()
