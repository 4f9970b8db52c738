"""What keying a map's items costs: the part made once per map (`map_context`), and 100,000 item keys.

Run: `PYTHONPATH=core python bench/bench_map_keys.py`. Prints figures; asserts nothing. Against a checkout
from before `nighthawk.batch.keys` it times the older keys (program, executor label, arguments) instead.
"""
import sys, time
import nighthawk as nh
from pydantic_ai.models.function import FunctionModel

threshold = 3
@nh.natural_function
def label(stars: int, text: str) -> str:
    """natural
    Return "high" if <stars> is at least <threshold>, else "low", for <text>.
    """

def answer(messages, info): ...

ex = nh.AgentStepExecutor.from_configuration(configuration=nh.StepExecutorConfiguration(model=FunctionModel(answer, model_name="s")))
items = [(n % 5, f"review number {n} " * 5) for n in range(100_000)]
with nh.run(ex):
    try:
        from nighthawk.batch.keys import item_key, map_context
        def run():
            t = time.perf_counter(); context = map_context(label).digest; once = time.perf_counter() - t
            for args in items: item_key(context, args)
            return once
    except ImportError:
        from nighthawk.batch.store import item_key, program_fingerprint
        from nighthawk.batch import _model_identity
        def run():
            t = time.perf_counter(); fp = program_fingerprint(label); model = _model_identity(); once = time.perf_counter() - t
            for args in items: item_key(fp, model, args)
            return once
    best = None
    for _ in range(3):
        t = time.perf_counter(); once = run(); total = time.perf_counter() - t
        best = min(best or total, total)
    print(f"per-map part {once*1e3:.2f} ms; 100,000 items keyed in {best:.2f} s ({best*1e6/100_000:.1f} us/item)")
