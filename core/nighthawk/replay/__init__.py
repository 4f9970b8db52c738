"""Record model exchanges once, replay them anywhere: a store file and a pydantic-ai model that reads it.

`ReplayModel` wraps any pydantic-ai model. In `record` mode it passes each request to the wrapped model and
stores the exchange; in `replay` mode it answers from the store and never builds, let alone calls, the
wrapped model; in `auto` mode it replays what the store has and records the rest. A request is found by the
sha256 of its canonical form: the messages, the instructions, the tool and output definitions and the model
settings, with what changes between two identical runs (timestamps, run ids, tool call ids, provider
response ids, usage) left out or renumbered. A changed prompt, changed data in scope or a changed tool
therefore changes the digest, and in `replay` mode the miss raises `ReplayMissError` with a diff against
the nearest stored request.

The digest covers the provider-neutral request, the history pydantic-ai hands to a model before an adapter
adds its own framing, so a store recorded against one provider replays with no provider at all.

The store (`ReplayStore`) is a YAML file, one entry per exchange. Recording appends to it under a file lock;
compacting sorts it by block and round, so recording the same run twice writes the same bytes. Loading
accepts plain data only and names any entry of the wrong shape. Every string passes through
`ContextRedaction.scrub_text`, and settings that carry headers or credential-like names are left out, so the
file holds no key or header.

The key holds only what the model sees. Prompts do not depend on the machine (token budgets are always
estimated, see `nighthawk.prompting._tokens`), so a store recorded anywhere replays anywhere; the context limits, renderer
style and library versions an entry was recorded with are kept beside the key, and a miss names them when
they differ.

The package's modules, each with one job, lowest first: `_canonical` (the key), `_yaml` (the file's text),
`_format` (the file's layout and its entries), `_match` (the stored request nearest to a miss), `_store`
(the file on disk), `_mode` (which mode is in force), `_diff` (the miss message), `_model` (`ReplayModel`)
and `_scope` (executors and `with` scopes).
"""

from __future__ import annotations

from ..errors import ReplayMissError
from ._canonical import canonical_request, request_digest
from ._format import FORMAT_VERSION, Exchange
from ._mode import MODE_VARIABLE, ReplayMode
from ._model import ReplayModel
from ._scope import replay_executor, replaying
from ._store import ReplayStore

__all__ = [
    "FORMAT_VERSION",
    "MODE_VARIABLE",
    "Exchange",
    "ReplayMissError",
    "ReplayMode",
    "ReplayModel",
    "ReplayStore",
    "canonical_request",
    "replay_executor",
    "replaying",
    "request_digest",
]
