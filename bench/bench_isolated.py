"""The cost of an isolated step over a guarded one, with the kernel holding 100 MB and then 2 GB of data.

Run with `PYTHONPATH=core:tests python bench/bench_isolated.py [--sizes-mb 100 2048] [--rounds 15] [--map N [--latency-s 0.2 ...]]`. Each
step makes the three calls a typical one makes (an `nh_eval`, an `nh_assign` to a write binding, a return
expression) against a scripted model; the guarded step runs under `combine(read_only(), no_network())`, the
isolated one under `isolated()`. The two alternate in one run (A/B), so that the machine's load falls on
both alike. Printed: the median and 90th percentile of each step's wall time, the median CPU time the
kernel's process spent on it (the fork, and the copies of the pages it writes while a child shares them),
and the extra time per isolated step: the difference of the medians, and the median difference of each
isolated step and the guarded step run just before it.

With `--map N` (1000 in the issue), then a map of N items against the test suite's OpenAI-compatible server
on loopback (200 ms a request, 32 at a time, as `bench_map_http.py`; `--latency-s` gives others, each its own
pair of maps), once guarded and once with
`isolated=True`: the elapsed time of each, the CPU time and page faults an item cost the kernel's process
and its walled children (workers and waves, counted once reaped), and the isolated map's throughput as a
share of the guarded one's. With `--unprivileged` (as root), the maps run as the user `nobody`, as an ordinary user's
would: each worker then has a keeper process of its own, which makes its namespaces (one fork more).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import numpy

import nighthawk as nh
from scripting import call, finish, scripted_executor


@nh.natural_function
def measure(data: object) -> object:
    total = None
    """natural
    Sum <data> into <:total> and return its size.
    """
    return total


def one_step(oversight: nh.oversight.Oversight, data: object) -> tuple[float, float]:
    """The step's wall time, and the CPU time the kernel's process spent on it (all its threads)."""
    executor, _ = scripted_executor(
        [call("nh_eval", expression="len(data)")],
        [call("nh_assign", target_path="total", expression="float(data[:1000].sum())")],
        [finish("return", return_expression="(total, len(data))")],
    )
    with nh.run(executor), nh.scope(oversight=oversight):
        started, cpu = time.perf_counter(), time.process_time()
        measure(data)
        return time.perf_counter() - started, time.process_time() - cpu


def map_throughput(count: int, latency_s: float, *, unprivileged: bool = False) -> None:
    from bench_map import label, load, texts  # bench/ is this script's path
    from bench_map_http import executor, provider

    os.environ.setdefault("NIGHTHAWK_TOKENIZER", "estimate")  # no vocabulary download for gpt-bench
    guarded = nh.oversight.combine(nh.oversight.read_only(), nh.oversight.no_network())
    elapsed: dict[str, float] = {}
    cpu: dict[str, tuple[float, float, int, int]] = {}
    kinds: dict[str, dict[str, object]] = {"guarded": {"oversight": guarded}, "isolated": {"isolated": True}}
    with provider(latency_s, "text.upper()"), nh.run(executor()):
        label("warm up")
        if unprivileged:
            from unprivileged_isolation import become_nobody  # tests/, on this script's path

            for name, options in kinds.items():  # what each map loads, loaded while root may read it
                nh.map(label, texts(4, f"warm {name} at {latency_s} s"), progress=False, **options)  # type: ignore[arg-type]
            become_nobody()
        for name, options in kinds.items():
            before = _cpu()
            started = time.perf_counter()
            nh.map(label, texts(count, f"{name} at {latency_s} s"), concurrency=32, progress=False, **options)  # type: ignore[arg-type]
            elapsed[name] = time.perf_counter() - started
            cpu[name] = tuple(after - earlier for after, earlier in zip(_cpu(), before, strict=True))  # type: ignore[assignment]
    who = "as nobody, " if unprivileged else ""
    print(f"map of {count} items, {latency_s * 1e3:.0f} ms a request, 32 at a time ({who}{load()}):")
    for name, seconds in elapsed.items():
        own, children, own_faults, children_faults = cpu[name]
        print(f"  {name:9} {seconds:6.2f} s  ({count / seconds:5.1f} items/s)   CPU an item: kernel {own / count * 1e3:4.1f} ms, "
              f"its walled children {children / count * 1e3:4.1f} ms   page faults an item: kernel {own_faults / count:5.0f}, "
              f"children {children_faults / count:5.0f}")
    print(f"  isolated throughput / guarded: {elapsed['guarded'] / elapsed['isolated']:.2f}")


def _cpu() -> tuple[float, float, int, int]:
    """The CPU time this process and its reaped children (the walled workers, the waves) spent so far, and
    their page faults (after a fork, each page either side writes first faults, and is copied if shared)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime, own.ru_minflt, children.ru_minflt


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes-mb", type=int, nargs="*", default=[100, 2048])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--map", type=int, default=0, dest="map_items")
    parser.add_argument("--latency-s", type=float, nargs="+", default=[0.2], help="the scripted server's time a request")
    parser.add_argument("--unprivileged", action="store_true", help="as root: run the maps as the user nobody")
    arguments = parser.parse_args()
    if arguments.unprivileged and len(arguments.latency_s) > 1:
        parser.error("--unprivileged takes one --latency-s: the process becomes nobody once")
    guarded = nh.oversight.combine(nh.oversight.read_only(), nh.oversight.no_network())
    isolated = nh.oversight.isolated()
    for size in arguments.sizes_mb:
        # Every page touched (resident, as a loaded DataFrame is) and no two values alike: an array of one
        # value would be read whole at each step to be shown as that value, burying the fork's cost in noise.
        data = numpy.arange(size * 2**20 // 8, dtype=numpy.float64)
        one_step(isolated, data), one_step(guarded, data)  # warm both paths up
        times: dict[str, list[tuple[float, float]]] = {"guarded": [], "isolated": []}
        for _ in range(arguments.rounds):
            times["guarded"].append(one_step(guarded, data))
            times["isolated"].append(one_step(isolated, data))
        print(f"kernel holding {size} MB, {arguments.rounds} steps each (3 calls a step):")
        for name, samples in times.items():
            ordered = sorted(wall for wall, _ in samples)
            cpu = statistics.median(cpu for _, cpu in samples)
            print(
                f"  {name:9} median {statistics.median(ordered) * 1e3:7.1f} ms   p90 {ordered[int(len(ordered) * 0.9) - 1] * 1e3:7.1f} ms"
                f"   kernel CPU {cpu * 1e3:6.1f} ms"
            )
        extra = statistics.median(wall for wall, _ in times["isolated"]) - statistics.median(wall for wall, _ in times["guarded"])
        # Each isolated step against the guarded one just before it: the machine's load drifts less in between.
        paired = statistics.median(iso - guard for (guard, _), (iso, _) in zip(times["guarded"], times["isolated"]))
        print(f"  extra time per isolated step: {extra * 1e3:.1f} ms, {paired * 1e3:.1f} ms the median of each pair "
              f"({os.getloadavg()[0]:.1f} load average)")
        del data
    if arguments.map_items:
        for latency_s in arguments.latency_s:
            map_throughput(arguments.map_items, latency_s, unprivileged=arguments.unprivileged)


if __name__ == "__main__":
    main()
