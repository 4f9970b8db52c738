"""What a map remembers an item by: everything that changes what the model is asked, or who answers.

An item's key digests, besides its arguments: the function's program (its source, and that of the natural
functions a wrapper names); the values its Natural programs read that are not its own locals (a global or an
enclosing variable named by `<name>` or `<name.attr>`, or in an f-string block's `{...}`); the executor's
request-shaping configuration (the model, its settings, the prompt templates and fragments, the rendering
limits and style, the redaction rules); and the fragments and implicit references of the enclosing scopes.
All of it but the arguments is the same for every item of one map, so it is digested once per map (the
*context*), and each item's key is the context and its arguments.

Values are digested as the arguments are, as JSON by pydantic (numpy values by their value), plus modules,
classes and functions by name (a function also by its compiled code). A value with no such form (a
connection, an object of a class pydantic does not know) cannot be told apart from a changed one: a map
whose context holds one keeps nothing, so it never answers from a stale memory (equal items still run once
within it).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import secrets
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..configuration import StepExecutorConfiguration
from ..errors import NighthawkError
from ..road.runtime import get_step_executor, prompt_suffix_fragments, scope_implicit_references
from .twin import natural_runtime

__all__ = ["KEY_FORMAT", "MapContext", "item_key", "map_context", "program_fingerprint"]

KEY_FORMAT = "nighthawk-map-item/2"
"""Part of every key. Keys of the first format (program, executor label and arguments only) never equal one
of these: an item a store holds under such a key runs again, its old row left unread."""

_PRIVATE_PREFIX = "_nighthawk_"
"""Names the compiled code of a natural function adds (its runtime, its read tuple): never a user's value."""


# --- the program ------------------------------------------------------------------------------------


def program_fingerprint(function: Callable[..., Any]) -> str:
    """The source that decides what `function` answers: its own, and that of natural functions it names."""
    plain = getattr(function, "__func__", function)
    return "\n".join([_source(plain), *(_source(called) for called in _named_natural_functions(plain))])


def _named_natural_functions(plain: object) -> list[object]:
    """The natural functions a wrapper (`lambda t: classify(t)`) names directly, one level deep; none for a
    natural function itself."""
    if natural_runtime(plain) is not None:
        return []
    code = getattr(plain, "__code__", None)
    namespace = {**getattr(plain, "__globals__", {}), **_closure(plain)}
    found = []
    for name in sorted(set(getattr(code, "co_names", ())) | set(getattr(code, "co_freevars", ()))):
        called = namespace.get(name)
        called = getattr(called, "__func__", called)
        if natural_runtime(called) is not None:
            found.append(called)
    return found


def _source(function: object) -> str:
    runtime = natural_runtime(function)
    if runtime is not None:
        return runtime.source  # as kept at decoration: the same in a process that has no file to read (a Ray actor)
    shown = getattr(function, "__wrapped__", function)
    try:
        return inspect.getsource(shown)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return f"{getattr(shown, '__module__', '')}.{getattr(shown, '__qualname__', repr(shown))}"


def _closure(function: object) -> dict[str, object]:
    code, cells = getattr(function, "__code__", None), getattr(function, "__closure__", None) or ()
    values: dict[str, object] = {}
    for name, cell in zip(getattr(code, "co_freevars", ()), cells):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return values


# --- the values its programs read -------------------------------------------------------------------


_UNRESOLVED = object()


def _program_reads(function: Callable[..., Any]) -> dict[tuple[str, str], object]:
    """The values the Natural programs of `function` (or of the natural functions a wrapper names) read from
    outside the call, by (function, name): what a call's arguments do not decide."""
    plain = getattr(function, "__func__", function)
    natural = [plain] if natural_runtime(plain) is not None else _named_natural_functions(plain)
    values: dict[tuple[str, str], object] = {}
    for each in natural:
        runtime = natural_runtime(each)
        assert runtime is not None
        for name in _names_read(runtime.specs):
            value = _outside_value(runtime, name)
            if value is not _UNRESOLVED:
                values[(runtime.function.__qualname__, name)] = value
    return values


def _names_read(specs: Iterable[Any]) -> list[str]:
    """Every name a block's program reads: its `<name>` bindings, the roots of its `<name.attr>` references,
    and the names in an f-string block's `{...}` fields."""
    names: dict[str, None] = {}
    for spec in specs:
        names.update(dict.fromkeys(spec.reads))
        if spec.program is not None:
            names.update(dict.fromkeys(spec.program.references))
        for field in spec.fields:  # the expression of a field, as the decorator unparsed it
            tree = ast.parse(field, mode="eval")
            names.update(dict.fromkeys(node.id for node in ast.walk(tree) if isinstance(node, ast.Name)))
    return list(names)


def _outside_value(runtime: Any, name: str) -> object:
    """What `name` is when a block of `runtime`'s function reads it, resolved as Python resolves it there;
    `_UNRESOLVED` for a local of the call (an argument, or a value its Python computes from them) and for a
    name bound nowhere (the item fails on it when it runs)."""
    if name.startswith(_PRIVATE_PREFIX):
        return _UNRESOLVED
    compiled = runtime.function
    code = compiled.__code__
    if name in code.co_varnames or name in code.co_cellvars:
        return _UNRESOLVED
    closure = _closure(compiled)
    if name in closure:
        return closure[name]
    enclosing = runtime.enclosing
    scope = () if enclosing is None else (*enclosing.f_code.co_varnames, *enclosing.f_code.co_cellvars, *enclosing.f_code.co_freevars)
    if name in scope:
        try:
            return runtime.outer(name)  # read late, as the block itself reads it
        except NameError:
            return _UNRESOLVED
    return compiled.__globals__.get(name, _UNRESOLVED)  # a builtin (`<len>`) is the same everywhere: left out


# --- the executor and the scope ---------------------------------------------------------------------


_REQUEST_FIELDS = (
    "model",
    "fallback_models",
    "model_settings",
    "prompts",
    "context_limits",
    "json_renderer_style",
    "context_redaction",
    "system_prompt_suffix_fragments",
    "user_prompt_suffix_fragments",
)
"""The fields of a `StepExecutorConfiguration` that change a request. Budgets, timeouts, retries and the
tokenizer change whether or when an answer comes, not which: a kept answer stands."""


_FIRST_HOMES = {"nighthawk.model.executor": "nighthawk.executor"}
"""Classes of ours that moved, by the module an item's key named them in before (the executor moved into
`nighthawk.model` in November 2026): the keys stay as they were, so a store made before still answers."""


def _class_name(kind: type) -> str:
    return f"{_FIRST_HOMES.get(kind.__module__, kind.__module__)}.{kind.__qualname__}"


def _executor_identity(executor: object) -> dict[str, object]:
    """Who answers and what shapes the requests: the executor's class and label, the callback of one that has
    one (a `CallbackExecutor`), and for an executor with a configuration (an `AgentStepExecutor`) its request
    fields and the model and settings of its own agent."""
    kind = type(executor)
    identity: dict[str, object] = {
        "executor": _class_name(kind),
        "label": str(getattr(executor, "model_label", "")),
    }
    callback = getattr(executor, "callback", None)
    if callable(callback):  # a `CallbackExecutor`: its callback answers
        identity["callback"] = _callable_identity(callback)
    configuration = getattr(executor, "configuration", None)
    if isinstance(configuration, StepExecutorConfiguration):
        fields = {name: getattr(configuration, name) for name in _REQUEST_FIELDS}
        fields["model"] = _model_identity(configuration.model)
        fields["fallback_models"] = [_model_identity(model) for model in configuration.fallback_models]
        identity["configuration"] = fields
    agent = getattr(executor, "agent", None)
    if agent is not None:
        model = getattr(agent, "model", None)
        identity["agent"] = {
            "model": None if model is None else _model_identity(model),
            "settings": getattr(agent, "model_settings", None),
        }
    return identity


def _model_identity(model: object) -> object:
    """A model, more closely than its label (every `FunctionModel` of a function named `respond` is labelled
    `function:respond`): its class, name, system, address and settings, and for a `FunctionModel` the function
    that answers; a wrapping model (a fallback chain) by the models it wraps."""
    if isinstance(model, str):
        return model
    kind = type(model)
    identity: dict[str, object] = {"class": _class_name(kind)}
    for attribute in ("model_name", "system", "base_url", "settings"):
        try:
            identity[attribute] = getattr(model, attribute, None)
        except Exception:  # a model that cannot say before it is used
            identity[attribute] = None
    for attribute in ("function", "stream_function"):  # a FunctionModel
        answers = getattr(model, attribute, None)
        if answers is not None:
            identity[attribute] = _callable_identity(answers)
    wrapped = getattr(model, "wrapped", None)
    if wrapped is not None:
        identity["wrapped"] = _model_identity(wrapped)
    models = getattr(model, "models", None)
    if isinstance(models, (list, tuple)):
        identity["models"] = [_model_identity(each) for each in models]
    return identity


def _callable_identity(answers: object) -> str:
    """A function by its module, qualified name and compiled code; a callable object by its class (its state,
    such as the answers a scripted model holds, is not part of it)."""
    plain = getattr(answers, "__func__", answers)
    code = getattr(plain, "__code__", None)
    if isinstance(plain, types.FunctionType) and isinstance(code, types.CodeType):
        return f"{plain.__module__}.{plain.__qualname__}:{_code_digest(code)}"
    if isinstance(plain, types.BuiltinFunctionType):
        return f"{plain.__module__}.{plain.__qualname__}"
    kind = type(plain)
    return _class_name(kind)


def _code_digest(code: types.CodeType) -> str:
    """What a function does, the same in every process of one Python version: its bytecode, the names it
    uses and its constants (not its source: a function sent by value to a Ray actor, or one whose file was
    removed, has none to read there, or a wrong one)."""
    digest = hashlib.sha256(code.co_code)
    digest.update(repr(code.co_names).encode())
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            digest.update(_code_digest(constant).encode())
        elif isinstance(constant, frozenset):  # `x in {"a", "b"}`: its order changes with the string hash seed
            digest.update(repr(sorted(map(repr, constant))).encode())
        else:
            digest.update(repr(constant).encode())
    return digest.hexdigest()[:32]


def _current_executor() -> object | None:
    try:
        return get_step_executor()
    except NighthawkError:
        return None  # no executor: the first item that needs one says so


# --- digests ----------------------------------------------------------------------------------------


class _Unstable(Exception):
    """A value with no form that is the same in every process and changes when it does."""


def _by_value(value: object) -> object:
    """pydantic's fallback for what it cannot serialise, for context values: a stable form, or `_Unstable`."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()  # a numpy scalar or array: its value, as for an argument
    if isinstance(value, types.ModuleType):
        return f"<module {value.__name__}>"
    if isinstance(value, type):
        return f"<class {value.__module__}.{value.__qualname__}>"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return f"<function {_callable_identity(value)}>"
    raise _Unstable(type(value).__qualname__)


def _digest_json(value: object) -> str | None:
    """`value` as JSON, the same in every process, or `None` when some part of it has no stable form."""
    import pydantic_core

    try:
        return pydantic_core.to_json(value, fallback=_by_value, bytes_mode="base64").decode()
    except Exception:  # `_Unstable` (pydantic wraps it), a cycle, a broken `__iter__`: no stable form
        return None


@dataclass(frozen=True)
class MapContext:
    """What a map's items are keyed by besides their arguments."""

    digest: str | None
    """The digest of it all, or `None` when some value of it cannot be digested stably: no item is kept."""
    unstable: str = ""
    """When `digest` is `None`: which value, in words (`the value of 'rules' that judge reads`)."""


def map_context(function: Callable[..., Any]) -> MapContext:
    """What decides every item of a map of `function` besides its arguments (see the module notes)."""
    executor = _current_executor()
    system, user = prompt_suffix_fragments()
    parts: dict[str, object] = {
        "the executor": None if executor is None else _executor_identity(executor),
        "the scope's prompt fragments": {"system": list(system), "user": list(user)},
        **{f"the implicit reference {name!r} of the scope": value for name, value in scope_implicit_references().items()},
        **{f"the value of {name!r} that {owner} reads": value for (owner, name), value in _program_reads(function).items()},
    }
    text = _digest_json(list(parts.items()))
    if text is None:  # name the first part without a stable form (walks the parts again only in this case)
        where = next((what for what, value in parts.items() if _digest_json(value) is None), "a value it depends on")
        return MapContext(None, where)
    return MapContext(hashlib.sha256(json.dumps([KEY_FORMAT, program_fingerprint(function), text]).encode()).hexdigest())


# --- one item ---------------------------------------------------------------------------------------


_PROCESS = secrets.token_hex(8)
"""Part of every identity key, so an address reused by another process never matches."""


def item_key(context: str, args: tuple[Any, ...]) -> tuple[str, tuple[object, ...]]:
    """The key of one item of a map with `context` (`map_context`), and the arguments it names by identity.

    An argument pydantic cannot serialise (a connection) counts by identity: it matches within this
    process only, and only while the entry that names it keeps it alive (so its address is not reused).
    """
    import pydantic_core

    anchors: list[object] = []

    def by_identity(value: object) -> object:
        if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
            return value.tolist()  # a numpy scalar or array from a column: its value, not its identity
        anchors.append(value)
        return f"<{type(value).__module__}.{type(value).__qualname__} at {id(value):#x} in {_PROCESS}>"

    # Bytes as base64: the bytes of an image are no UTF-8, which pydantic's default for bytes requires.
    arguments = pydantic_core.to_json(list(args), fallback=by_identity, bytes_mode="base64").decode()
    key = hashlib.sha256(json.dumps([context, arguments]).encode()).hexdigest()
    return key, tuple(anchors)
