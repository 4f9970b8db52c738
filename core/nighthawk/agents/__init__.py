"""Coding agents as executors: `claude-code-sdk:<model>`, `claude-code-cli:<model>` and `codex:<model>`.

Each backend is a pydantic-ai model (`_model.py`) that runs the agent and serves it the block's tools over a
local MCP server (`_bridge.py`), so the rest of Nighthawk treats it as any other model. This face is light:
it names the prefixes and imports a backend (pydantic, pydantic-ai, mcp) only when one is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

__all__ = ["AGENT_PREFIXES", "agent_model", "check_agent_model_settings", "is_agent_model", "near_agent_model"]

AGENT_PREFIXES: Mapping[str, tuple[str, str, str]] = {
    "claude-code-sdk": ("claude_sdk", "ClaudeCodeSdkBackend", "ClaudeCodeSdkModelSettings"),
    "claude-code-cli": ("claude_cli", "ClaudeCodeCliBackend", "ClaudeCodeCliModelSettings"),
    "codex": ("codex", "CodexBackend", "CodexModelSettings"),
}
"""Model prefix -> (module of this package, backend class, settings class)."""


def is_agent_model(model: object) -> bool:
    """Whether `model` is a `provider:model` string naming a coding-agent backend."""
    return isinstance(model, str) and model.partition(":")[0] in AGENT_PREFIXES


def near_agent_model(model: str) -> str | None:
    """The coding-agent model `model` was most likely meant to be (`claude-code-cil:default` ->
    `claude-code-cli:default`), or `None` when its provider is not close to one."""
    import difflib

    provider, _, name = model.partition(":")
    close = difflib.get_close_matches(provider.strip().lower().replace("_", "-"), AGENT_PREFIXES, n=1, cutoff=0.75)
    return f"{close[0]}:{name.strip()}" if close else None


def check_agent_model_settings(model: str, settings: Mapping[str, Any] | None) -> None:
    """Check `model_settings` against the settings class of `model`'s backend.

    Raises:
        NighthawkError: A key the backend does not have, or a value it refuses.
    """
    from ._settings import check_agent_settings  # here: it imports pydantic

    prefix = model.partition(":")[0]
    settings_class = getattr(importlib.import_module(f"{__name__}._settings"), AGENT_PREFIXES[prefix][2])
    check_agent_settings(settings_class, model, settings)


def agent_model(model: str) -> Any:
    """The pydantic-ai model for a coding-agent `provider:model` string (`<prefix>:default`: the agent's own)."""
    from ._model import CodingAgentModel  # here: it imports pydantic-ai

    prefix, _, name = model.partition(":")
    module, backend, _ = AGENT_PREFIXES[prefix]
    backend_class = getattr(importlib.import_module(f"{__name__}.{module}"), backend)
    return CodingAgentModel(backend_class(), name.strip())
