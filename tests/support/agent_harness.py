"""A fake coding agent for the tests: the `claude` and `codex` programs of `fake_agent.py` on PATH, its
`claude_agent_sdk` module in `sys.modules`, and what they logged."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.models import override_allow_model_requests

import nighthawk as nh
from support import fake_agent

BACKENDS = ["claude-code-cli", "claude-code-sdk", "codex"]


@dataclass
class FakeAgent:
    backend: str
    folder: Path
    settings: dict[str, Any] = field(default_factory=dict)
    """Settings every executor gets (the fake `claude` as `executable`, for the real SDK)."""

    def script(self, *turns: list[dict[str, Any]]) -> None:
        """What the agent does, one list of actions per turn (a resumed session is the next turn)."""
        (self.folder / "scenario.json").write_text(json.dumps({"turns": list(turns)}))

    def executor(self, model: str = "default", **settings: Any) -> nh.AgentStepExecutor:
        settings = {**self.settings, **settings}
        configuration = nh.StepExecutorConfiguration(model=f"{self.backend}:{model}", model_settings=settings or None)
        return nh.AgentStepExecutor.from_configuration(configuration=configuration)

    @property
    def runs(self) -> list[dict[str, Any]]:
        log = self.folder / "log.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def tool_results(self, run: int = 0) -> list[str]:
        return [result["text"] for result in self.runs[run]["tool_results"]]

    def hanging(self) -> dict[str, Any] | None:
        pidfile = self.folder / "agent.pid"
        return json.loads(pidfile.read_text()) if pidfile.exists() and pidfile.read_text() else None


def make_executable(folder: Path, name: str) -> None:
    support = Path(fake_agent.__file__).parent
    path = folder / name
    path.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(support)!r})\nimport fake_agent\nfake_agent.main_{name}()\n"
    )
    path.chmod(0o755)


def fake_agent_environment(folder: Path) -> dict[str, str]:
    """The environment in which the fake programs are on PATH and act out (and log) `folder`'s scenario."""
    programs = folder / "bin"
    programs.mkdir(exist_ok=True)
    for name in ("claude", "codex"):
        make_executable(programs, name)
    return {
        "PATH": f"{programs}{os.pathsep}{os.environ['PATH']}",
        "FAKE_AGENT_SCENARIO": str(folder / "scenario.json"),
        "FAKE_AGENT_LOG": str(folder / "log.jsonl"),
        "FAKE_AGENT_PIDFILE": str(folder / "agent.pid"),
    }


@pytest.fixture(params=BACKENDS)
def agent(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fake of each backend; `claude-code-sdk` is the in-process fake of the `claude_agent_sdk` module."""
    for name, value in fake_agent_environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", fake_agent.fake_sdk_module())
    with override_allow_model_requests(True):
        yield FakeAgent(request.param, tmp_path)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"call": name, "arguments": arguments}


def outcome(kind: str = "pass", **fields: Any) -> dict[str, Any]:
    return call("nh_outcome", kind=kind, **fields)


def fake_agent_sdk() -> Any:
    return sys.modules["claude_agent_sdk"]


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie waiting for its parent to reap it does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")
