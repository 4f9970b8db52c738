"""Models built from `provider:model` strings: the key check before any request, the retry count set on the
SDK client once, tool schemas adapted to the provider once per set of definitions (`_schema_adaptation`), and
what to say when the string names no provider. Every model's HTTP client, built here or given, reports what it
sends and reads to the step (`_wire_count`).

`import nighthawk` leaves this out like the rest of the executor's step machinery: pydantic-ai is imported
only to build a model.
"""

from __future__ import annotations

import os
from typing import Any

from ..agents import agent_model, is_agent_model, near_agent_model
from ..errors import ModelConfigurationError
from ._schema_adaptation import adapt_schemas_once
from ._wire_count import count_on_the_wire

__all__ = ["build_model", "check_credentials"]

# Environment variable each provider prefix reads its key from, for a message before any request is made.
_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google-gla": "GEMINI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
}


def build_model(model: Any, max_retries: int | None) -> tuple[Any, bool]:
    """A pydantic-ai model for a `provider:model` string (checking its key first) or a `Model` as it is, and
    whether its SDK client now retries `max_retries` times.

    The retry count is set once on the client of a model built here (its own client, made for it): passed in
    each request's settings instead, pydantic-ai would copy the client for every request. A `Model` given
    by the user keeps its client; its requests carry the setting.
    """
    if not isinstance(model, str):
        count_on_the_wire(model)  # the user's model object, provider or HTTP client: its requests count too
        return model, False
    if is_agent_model(model):
        return agent_model(model), False
    built = _infer_model(model)
    adapt_schemas_once(built)
    count_on_the_wire(built)
    client = getattr(built, "client", None)
    if max_retries is None or not isinstance(getattr(client, "max_retries", None), int):
        return built, False
    client.max_retries = max_retries
    return built, True


def _infer_model(model: str) -> Any:
    """pydantic-ai's model for a `provider:model` string, or a `ModelConfigurationError` that says what to change."""
    check_credentials(model)
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model

    try:
        return infer_model(model)
    except (UserError, ImportError, ValueError) as exc:
        near = near_agent_model(model)
        if near is not None:
            raise ModelConfigurationError(f"cannot use `model` {model!r}: there is no such provider; did you mean {near!r}?") from exc
        raise ModelConfigurationError(
            f"cannot use `model` {model!r}: {exc}. Choose another with "
            "`StepExecutorConfiguration(model='provider:model')` or, in a notebook, `%nighthawk model ...`"
        ) from exc


def check_credentials(model: str) -> None:
    """Fail before any network call when a `provider:model` string's API key is missing from the environment.

    Raises:
        ModelConfigurationError: The key's environment variable is unset.
    """
    provider = model.split(":", 1)[0]
    variable = _KEY_VARIABLES.get(provider)
    if variable is None or os.environ.get(variable):
        return
    if provider.startswith("openai") and os.environ.get("OPENAI_BASE_URL"):
        return  # an OpenAI-compatible server (local or proxy) may need no key
    raise ModelConfigurationError(
        f"`model` {model!r} needs an API key in the environment variable `{variable}`, which is not set. "
        f"Set it (for example `export {variable}=...`), or choose another model with "
        "`StepExecutorConfiguration(model='provider:model')` (in a notebook: `%nighthawk model provider:model`)."
    )
