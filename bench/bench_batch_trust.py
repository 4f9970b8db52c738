"""What a map says it spent, and how a batch map meets a refused submission or an unreadable batch list.

Run: `python bench/bench_batch_trust.py [--against COMMIT]` (with nighthawk installed or PYTHONPATH=core).
Prints figures; asserts nothing. With `--against`, each figure is measured for a `git archive` of `COMMIT`
and for this tree, in turn, in child processes; the local servers are always this tree's
(`tests/support/`), on loopback.

(a) 1,000 items with `batch_api=True` against a server that refuses the key (HTTP 401 to every request, as a
    provider does), then one that refuses only the upload (401): the time until the map stops, from its start
    and from the first refusal, what it names, and the requests it counts as sent.
(b) 1,000 items (`openai-chat:gpt-4o-mini`, priced) sent directly: every tenth item answering HTTP 500 with
    the SDK's retries off (`max_retries=0`), then every tenth request answering HTTP 500 with the SDK
    retrying (2): the map's cost line, and its request count beside the requests the server saw.
(c) A process killed (SIGKILL) after the provider made its batch and before it heard the id; the batch list
    then answers 200 with something that is not a list; the same map runs again: the batches made, and the
    first words of what the second run said.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
ITEMS = 1_000


def _environment() -> None:
    sys.path.insert(0, str(TESTS))
    os.environ.update(NIGHTHAWK_TOKENIZER="estimate", NIGHTHAWK_BATCH_POLL_S="0.05", OPENAI_API_KEY="bench-key")


def _answer(request: Any) -> Any:
    from support.openai_server import Reply, tool_call

    return Reply(calls=[tool_call("nh_outcome", kind="return", return_expression="text.upper()")])


SHOUT = '''
import nighthawk as nh

@nh.natural_function
def shout(text: str) -> str:
    """natural
    Shout <text>.
    """
'''


def _shout() -> Any:
    """The mapped function, from a module file (its Natural block is read from its source)."""
    import importlib.util

    path = Path(tempfile.mkdtemp(prefix="nh-bench-")) / "bench_shout.py"
    path.write_text(SHOUT)
    spec = importlib.util.spec_from_file_location("bench_shout", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.shout


def refused() -> None:
    refused_upload(refuse_key=401)
    refused_upload(refuse_submission=401)


def refused_upload(**refusal: int) -> None:
    _environment()
    import nighthawk as nh
    from pydantic_ai.models import override_allow_model_requests
    from support.batch_server import BatchServer

    with BatchServer(_answer, **refusal, lifetime=120.0) as server, tempfile.TemporaryDirectory() as folder:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-4o-mini", max_retries=0)
        started = time.perf_counter()
        with override_allow_model_requests(True), nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)):
            try:
                texts = [f"word {n}" for n in range(ITEMS)]
                nh.map(_shout(), texts, batch_api=True, on_error="collect", store=f"{folder}/map.sqlite", progress=False)
                said, usage = "did not stop", None
            except nh.MapItemError as exc:
                said, usage = str(exc), exc.partial.usage
        ended = time.perf_counter()
        took = ended - started
        after = f"{ended - server.refused_at:.1f} s after the refusal" if server.refused_at else "no refusal"
    uploads = server.refused_submissions + sum(path.startswith("POST") for path in server.refused_paths)
    print(f"(a) {', '.join(refusal)}: stopped after {took:.1f} s ({after}); usage.requests "
          f"{getattr(usage, 'requests', '?')}; uploads tried {uploads}; said: {said[:150]}")


def failing_tenth() -> None:
    _environment()
    import nighthawk as nh
    from pydantic_ai.models import override_allow_model_requests
    from nighthawk.batch.store import session_store
    from support.openai_server import ScriptedOpenAIServer, Status

    def script(request: Any) -> Any:
        number = re.search(r"word (\d+)", str(request.body))
        return Status(500, "the model crashed") if number and int(number.group(1)) % 10 == 9 else _answer(request)

    def every_tenth_request(request: Any) -> Any:
        return Status(500, "busy") if request.index % 10 == 9 else _answer(request)

    shout = _shout()
    for retries, answers in ((0, script), (2, every_tenth_request)):
        session_store().clear()  # the second map asks again for what the first answered
        with ScriptedOpenAIServer(answers, lifetime=300.0, max_requests=100_000) as server:
            os.environ["OPENAI_BASE_URL"] = server.base_url
            configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-4o-mini", max_retries=retries)
            with override_allow_model_requests(True), nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)):
                import io
                from contextlib import redirect_stderr

                stream = io.StringIO()
                with redirect_stderr(stream):
                    texts = [f"word {n}" for n in range(ITEMS)]
                    result = nh.map(shout, texts, on_error="collect", concurrency=16, progress=True)
            line = stream.getvalue().split("\r")[-1].strip()
            print(f"(b) max_retries={retries}: {len(result.errors)} failed items; usage.requests {result.usage.requests} "
                  f"(server saw {server.request_count}); cost_usd {result.usage.cost_usd}; line: {line}")


CHILD = SHOUT + '''
import sys
configuration = nh.StepExecutorConfiguration(model="openai-chat:gpt-4o-mini", max_retries=0)
with nh.run(nh.AgentStepExecutor.from_configuration(configuration=configuration)):
    nh.map(shout, [f"word {n}" for n in range(50)], batch_api=True, store=sys.argv[1], progress=False)
'''


def killed_then_unreadable() -> None:
    _environment()
    from support.batch_server import BatchServer

    with BatchServer(_answer, create_delay=3.0, lifetime=120.0) as server, tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "child.py"
        script.write_text(CHILD)
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url}
        command = [sys.executable, str(script), f"{folder}/map.sqlite"]
        first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not server.batches:
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)
        first.wait()
        server.list_answer = {"object": "page", "items": []}
        server.create_delay = 0.0
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        said = (second.stderr.strip().splitlines() or [""])[-1]
    print(f"(c) batches made: {len(server.batches)} ({server.batch_lines} lines) for 1 map of 50 items; "
          f"second run exit {second.returncode}; said: {said[:220]}")


FIGURES = {"a": refused, "b": failing_tenth, "c": killed_then_unreadable}


def against(commit: str) -> None:
    from bench_startup import extract

    with tempfile.TemporaryDirectory(prefix="nh-batch-trust-") as folder:
        trees = {commit: extract(commit, Path(folder) / "base"), "this tree": REPO}
        for figure in FIGURES:
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "core"), str(tree)])}
                out = subprocess.run([sys.executable, __file__, "--figure", figure], capture_output=True, text=True, env=env)
                for line in (out.stdout or out.stderr[-400:]).splitlines():
                    print(f"{name:>10} | {line}", flush=True)


def main() -> None:
    if "--figure" in sys.argv:
        FIGURES[sys.argv[sys.argv.index("--figure") + 1]]()
    elif "--against" in sys.argv:
        against(sys.argv[sys.argv.index("--against") + 1])
    else:
        for figure in FIGURES.values():
            figure()


if __name__ == "__main__":
    main()
