"""Short error reports: what went wrong and what to do, without the frames of the runtime and its libraries.

A failed block used to print its whole cause chain, dozens of frames through pydantic-ai and asyncio, where
the one useful line was at the bottom. IPython asks an exception for `_render_traceback_` before formatting
it; Nighthawk errors answer with the frames of the user's own code and the message. The chain stays on the
exception and is kept for `nighthawk.last_error()`.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MESSAGE_LIMIT",
    "connection_error_message",
    "http_error_message",
    "output_cap_message",
    "short_traceback",
    "shown_short",
    "transport_failure",
    "trim_advice",
]

MESSAGE_LIMIT = 1_000
"""Characters of an error message shown in a short report (the full text stays on the exception)."""

_FRAME_LIMIT = 4
_HINT = "(full cause chain: `%nighthawk traceback` in a notebook, or `nighthawk.last_error()`)"

# Frames from these folders are the runtime's and its libraries', never the user's. (`os.path`, not
# `pathlib`: this module loads with `import nighthawk`, and pathlib would bring urllib and ipaddress along.)
_PACKAGE = os.path.dirname(os.path.realpath(__file__))
_HIDDEN = (
    _PACKAGE,  # nighthawk
    os.path.join(os.path.dirname(os.path.dirname(_PACKAGE)), "nighthawk_ipython"),  # a source checkout
    os.path.dirname(os.path.realpath(traceback.__file__)),  # the standard library (asyncio, concurrent, ...)
)


def _hidden(filename: str) -> bool:
    if "site-packages" in filename or "dist-packages" in filename:
        return True
    try:
        resolved = os.path.realpath(filename)
    except (OSError, ValueError):
        return False
    return resolved.startswith(_HIDDEN)


def short_traceback(error: BaseException) -> list[str]:
    """The lines IPython shows for `error`: up to a few of the user's frames, the message, and where the rest is."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if not _hidden(frame.filename)]
    lines = [line.rstrip("\n") for line in traceback.format_list(frames[-_FRAME_LIMIT:])]
    message = str(error)
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT] + f"... ({len(message) - MESSAGE_LIMIT} more characters)"
    lines.append(f"{type(error).__name__}: {message}" if message else type(error).__name__)
    if error.__cause__ is not None or error.__context__ is not None:
        lines.append(_HINT)
    return lines


def shown_short(error: BaseException) -> BaseException:
    """Give `error` (any type, for example one a scripted model or a `raise` outcome raised) the short report
    Nighthawk errors have, unless it brings its own; its type, message and chain are unchanged."""
    if not hasattr(error, "_render_traceback_"):
        try:
            error._render_traceback_ = lambda: short_traceback(error)  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # an exception type without an instance dictionary
            pass
    return error


def trim_advice(text: str) -> str:
    """Drop pydantic-ai's advice to raise a retry or usage limit: Nighthawk's limits are not the user's knob."""
    for marker in (". Consider raising", " Consider raising"):
        index = text.find(marker)
        if index >= 0:
            return text[:index].rstrip(" .") + "."
    return text


def _where(model: Any) -> str:
    """`provider at base URL` for a pydantic-ai model (unwrapping a replay model)."""
    inner = getattr(model, "_wrapped", None) or model
    system = getattr(inner, "system", None) or type(inner).__name__
    try:
        base_url = getattr(inner, "base_url", None)
    except Exception:  # noqa: BLE001 - a property of a third-party model: only for the message
        base_url = None
    if not base_url and str(system).startswith("openai"):
        base_url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    return f"{system} at {base_url}" if base_url else str(system)


# What an exception in a failed request's chain says happened on the wire, by class name: the transport
# libraries (httpx, aiohttp, the SDKs) are not imported here, and any of them may sit in the chain.
_CANNOT_CONNECT = frozenset({
    "ConnectError", "ConnectTimeout", "ClientConnectorError", "ConnectionRefusedError", "gaierror",
    "SSLError", "SSLCertVerificationError", "ClientSSLError", "ClientConnectorCertificateError", "ProxyError",
})
_NO_ANSWER = frozenset({"ReadTimeout", "WriteTimeout", "ModelTimeoutError", "ModelRequestTimeout", "ServerTimeoutError"})
_DROPPED = frozenset({"RemoteProtocolError", "ReadError", "ServerDisconnectedError", "ConnectionResetError"})


_SLOW = (
    "The model is slow or its answer long: raise `request_timeout_s` (in a notebook: `%nighthawk limits "
    "request_timeout_s=300`), or use a smaller or faster model."
)


def transport_failure(error: BaseException | None) -> str:
    """`connect` (refused, DNS, TLS, proxy), `answer` (connected, no answer in time), `dropped` (the
    connection broke mid-answer) or `unknown`, from `error`'s cause and context chain: the transport phase
    pydantic-ai names (`connect`, `write`, `read`), else the classes of the transport's own exceptions."""
    names: set[str] = set()
    phases: set[object] = set()
    seen: set[int] = set()
    current = error
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        names.update(cls.__name__ for cls in type(current).__mro__)
        phases.add(getattr(current, "phase", None))
        current = current.__cause__ or current.__context__
    if "connect" in phases or names & _CANNOT_CONNECT:
        return "connect"
    if names & _NO_ANSWER:
        return "answer"
    if phases & {"read", "write"} or names & _DROPPED:
        return "dropped"
    return "unknown"


def connection_error_message(
    model: Any,
    model_name: str,
    detail: str,
    *,
    error: BaseException | None = None,
    waited_s: float | None = None,
    settings: Mapping[str, Any] | None = None,
) -> str:
    """The message of a request that never got an answer: no connection, no answer in time, or a broken one.

    Args:
        error: The failure, whose chain says which of those it was.
        waited_s: Seconds from sending the request to the failure.
        settings: The request's model settings, for the per-attempt `timeout` when no deadline names its own.
    """
    # pydantic-ai's request deadline says its figure; else the per-attempt `timeout` setting, if a number.
    timeout_s = getattr(error, "timeout", None) or (settings or {}).get("timeout")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
        timeout_s = None
    where = f"{_where(model)} (model {model_name!r})"
    detail = trim_advice(detail).strip()
    if detail and not detail.endswith((".", "!", "?")):
        detail += "."
    waited = "" if waited_s is None else f" after {waited_s:.1f} s"
    match transport_failure(error):
        case "connect":
            return (
                f"cannot connect to the model provider {where}: {detail} Check the base URL, the network or proxy "
                "(and for https the certificate), and that the server is running; then run the block again."
            )
        case "answer" if timeout_s is not None and waited_s is not None:
            return (
                f"the model provider {_where(model)} (model {model_name!r}) accepted the request but sent no answer "
                f"within {timeout_s:g} s (the model had been generating for {waited_s:.1f} s): {detail} {_SLOW}"
            )
        case "answer":
            return (
                f"the model provider {_where(model)} (model {model_name!r}) accepted the request but sent no answer "
                f"in time{waited}: {detail} {_SLOW}"
            )
        case "dropped":
            return (
                f"the connection to the model provider {where} broke before the answer was complete{waited}: "
                f"{detail} Check the server (its log, its memory) and run the block again."
            )
        case _:
            return (
                f"the request to the model provider {where} failed{waited}: {detail} Check the base URL, the "
                "network or proxy, and that the server is running; then run the block again."
            )


def http_error_message(model: Any, model_name: str, status: int, body: object) -> str:
    """The message of an HTTP error answer, with the provider's own explanation when it gave one."""
    explanation = _provider_message(body)
    hint = {
        401: "Check the API key.",
        403: "Check the API key's permissions.",
        404: "Check the model name and the base URL.",
        429: "The provider is rate limiting or out of quota; wait, or check the account.",
    }.get(status, "Check the request settings, or try again later." if status < 500 else "Try again later.")
    if not explanation.endswith((".", "!", "?")):
        explanation += "."  # llama.cpp's sentences end without one
    return f"the model provider {_where(model)} answered HTTP {status} for model {model_name!r}: {explanation} {hint}"


def _provider_message(body: object) -> str:
    if isinstance(body, (str, bytes)):
        try:
            body = json.loads(body)
        except ValueError:
            return str(body)[:300] or "(no message)"
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
    return str(body)[:300] if body is not None else "(no message)"


def output_cap_message(cap: object) -> str:
    """Why a step failed when the model's answer reached the output cap (`finish_reason` "length")."""
    where = f"{cap} tokens" if isinstance(cap, int) else "the provider's output limit"
    return (
        f"the model's answer was cut at {where} (the output cap) before it finished its tool call or outcome. "
        "A model that never ends its turn (common with a local model whose chat template does not match) hits "
        "it too: check the server's template. To allow longer answers, raise it with "
        "`StepExecutorConfiguration(model_settings={'max_tokens': 16_000})`."
    )
