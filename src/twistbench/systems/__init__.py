"""Reference systems and the table that `twist run --system` resolves.

Built-in names: flat-rag, fact-rag, heuristic, oracle (the default four), mem0 (the optional
mem0 extra) and, where an LLM endpoint is configured, flat-rag-llm, full-context and
fact-rag-llm; "http://host:port" (or https://) is a system served over the HTTP contract
(systems/http.py); installed plugins register more under the
`twistbench.systems` entry-point group. Any other spec "package.module:Class" or
"path/to/file.py:Class" is imported and constructed with the `-S key=value` options, coerced to
the types the constructor's annotations declare. Only registry entries with gold_channel=True
(the oracle) ever receive gold, through contract.GoldReader; an imported class never does.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import types
import typing
from dataclasses import dataclass
from typing import Any

from twistbench.contract import GoldReader, MemorySystem
from twistbench.errors import InputError
from twistbench.llm import is_configured
from twistbench.model import Dataset
from twistbench.plugins import entry_points, resolve
from twistbench.systems.http import HttpSystem, is_http_spec
from twistbench.wire.server import ContractServer

ENTRY_POINT_GROUP = "twistbench.systems"


@dataclass(frozen=True)
class SystemEntry:
    name: str
    target: str  # "module:Class", "file.py:Class", or the entry point's value
    gold_channel: bool
    description: str
    needs_llm: bool = False  # available only when an LLM endpoint is configured (SYSTEM role)


# The built-in reference systems. A separate package registers its own under the
# `twistbench.systems` entry-point group; `-s module:Class` and `-s path/to/file.py:Class` work
# without registering.
REGISTRY: dict[str, SystemEntry] = {
    e.name: e
    for e in [
        SystemEntry("flat-rag", "twistbench.systems.flat_rag:FlatRAG", False,
                    "stores raw turns; recall = top retrieved turn(s); no contradiction "
                    "machinery; drafts always aligned without an LLM"),
        SystemEntry("fact-rag", "twistbench.systems.fact_rag:FactRAG", False,
                    "Mem0-style: dated atomic facts per turn, recall prefers the most recent "
                    "matching fact; no conflict detection"),
        SystemEntry("heuristic", "twistbench.systems.heuristic:HeuristicSystem", False,
                    "non-LLM contradiction machinery: same-speaker similarity + stance change; "
                    "supersession; write-time PII/crisis governance"),
        SystemEntry("oracle", "twistbench.systems.oracle:Oracle", True,
                    "answers from the gold (explicit gold channel): the ceiling check"),
        SystemEntry("mem0", "twistbench.systems.mem0:Mem0System", False,
                    "Mem0 OSS (pip install 'twistbench[mem0]'): offline, infer=False, in-memory "
                    "Qdrant, MiniLM int8; one add per turn keeps source turns"),
        SystemEntry("flat-rag-llm", "twistbench.systems.flat_rag_llm:FlatRAGLLM", False,
                    "flat RAG + a model: retrieved turns -> verdict with citations, tensions "
                    "asked per session, answers citing turns (the public TWIST baseline)", True),
        SystemEntry("full-context", "twistbench.systems.full_context:FullContext", False,
                    "the whole record in the model's context where it fits; declines where "
                    "it does not", True),
        SystemEntry("fact-rag-llm", "twistbench.systems.fact_rag_llm:FactRAGLLM", False,
                    "Mem0-style: a model extracts facts (ADD / UPDATE / DELETE with source "
                    "turns); recall returns memories for the run's answerer", True),
    ]
}

DEFAULT_SYSTEMS = ("flat-rag", "fact-rag", "heuristic", "oracle")


def available_systems() -> dict[str, SystemEntry]:
    """The built-in systems plus those installed packages register as entry points."""
    out = dict(REGISTRY)
    for name, ep in entry_points(ENTRY_POINT_GROUP).items():
        out.setdefault(name, SystemEntry(name, ep.value, False, f"plugin ({ep.value})"))
    return out


def make_system(spec: str, options: dict[str, str] | None = None
                ) -> tuple[MemorySystem, SystemEntry]:
    """Build a system from a registered name, an entry point, "module:Class" or
    "path/to/file.py:Class", with string options coerced.

    Raises InputError for an unknown name, an import failure, an unknown option (naming the
    accepted ones) or a value that does not convert to the annotated type. Only built-in entries
    with gold_channel=True (the oracle) ever receive gold.
    """
    cls, kwargs, entry, options = _prepare(spec, options)
    return _construct(cls, kwargs, spec, options), entry


def check_system(spec: str, options: dict[str, str] | None = None) -> None:
    """make_system's checks without building the system (its class resolves, the options
    convert, an LLM endpoint is configured where needed): `twist run` checks every --system
    before it runs the first one. InputError as make_system raises it."""
    _prepare(spec, options)


def _prepare(spec: str, options: dict[str, str] | None
             ) -> tuple[Any, dict[str, Any], SystemEntry, dict[str, str]]:
    """(class or factory, coerced options, registry entry, the options left) for a spec."""
    options = dict(options or {})
    if spec in REGISTRY and REGISTRY[spec].needs_llm and not is_configured(role="system"):
        raise InputError("--system", f"{spec} needs an LLM endpoint and none is configured",
                         field="system", expected="TWIST_LLM_BASE_URL and TWIST_LLM_MODEL (or "
                         "TWIST_SYSTEM_BASE_URL / TWIST_SYSTEM_MODEL) naming an "
                         "OpenAI-compatible endpoint")
    table = {name: e.target for name, e in REGISTRY.items()}
    if is_http_spec(spec):  # a system served over the HTTP contract (systems/http.py)
        cls: Any = functools.partial(HttpSystem, spec)
        options.pop("url", None)
        kwargs = coerce_options(HttpSystem, options, spec)
        entry = SystemEntry(spec, spec, False, "a system served over the HTTP contract")
        return cls, kwargs, entry, options
    cls = resolve(spec, table=table, group=ENTRY_POINT_GROUP, flag="--system", what="system")
    if spec in REGISTRY:
        entry = REGISTRY[spec]
    else:
        doc = (inspect.getdoc(cls) or "").splitlines()
        entry = SystemEntry(spec, spec, False, doc[0] if doc else "")
    kwargs = coerce_options(cls, options, spec)
    return cls, kwargs, entry, options


def _construct(cls: Any, kwargs: dict[str, Any], spec: str, options: dict[str, str]
               ) -> MemorySystem:
    try:
        system = cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the user's constructor may raise anything
        raise InputError("-S" if options else "--system",
                         f"constructing system {spec} raised {_exc_text(exc)}",
                         field="system", expected="a constructor that accepts these options") \
            from None
    try:
        conforms = isinstance(system, MemorySystem)
    except Exception:  # noqa: BLE001 - a property of the plug-in raised while being checked
        conforms = False
    if not conforms:
        raise InputError("--system", f"{spec} does not implement the MemorySystem contract",
                         field="system",
                         expected="name, capabilities and the contract calls (subclass "
                                  "twistbench.contract.BaseSystem)")
    return system


def declared_name(spec: str) -> str | None:
    """The name a system's class declares (a class attribute `name`), read without building it:
    what `--isolate process` names the run folder by, since the system is built only in the
    child. None when the class cannot be imported here or declares no plain string."""
    table = {name: e.target for name, e in REGISTRY.items()}
    try:
        cls: Any = resolve(spec, table=table, group=ENTRY_POINT_GROUP, flag="--system",
                           what="system")
        name = inspect.getattr_static(cls, "name", None)
    except Exception:  # noqa: BLE001 - the child reports a bad spec, with its own message
        return None
    return name if isinstance(name, str) and name else None


def build_system(spec: str, options: dict[str, str] | None = None) -> MemorySystem:
    """make_system without the registry entry: a picklable factory (functools.partial of it)
    that rebuilds the system after a timeout, or in a child process (`--isolate process`)."""
    return make_system(spec, options)[0]


def serve_system(spec: str, options: dict[str, str], *, host: str = "127.0.0.1", port: int = 0,
                 api_key_env: str | None = None, log: bool = False,
                 gold: Dataset | None = None) -> ContractServer:
    """`twist serve`: a server of the HTTP contract over `spec`, one instance per conversation.
    gold: the dataset whose gold a gold-channel system (the oracle) receives in every instance,
    as the runner gives it in-process (the channel itself is not on the wire). InputError for
    an unknown system, the oracle without gold, an unset token variable or a port that cannot
    be bound."""
    if not 0 <= port <= 65535:
        raise InputError("--port", f"is {port}", field="port", expected="0 to 65535 (0: any free)")
    _, entry = make_system(spec, options)  # bad input fails here, before anything listens
    factory: Any = functools.partial(build_system, spec, options)
    if entry.gold_channel:
        if gold is None:
            raise InputError(spec, "the oracle answers from the gold, which the HTTP contract "
                             "does not carry", field="--dataset",
                             expected="the dataset whose gold it is served with (--dataset)")
        factory = functools.partial(_with_gold, spec, options, gold)
    token = None
    if api_key_env is not None:
        token = os.environ.get(api_key_env)
        if not token:
            raise InputError("--api-key-env", f"environment variable {api_key_env} is not set",
                             field="api_key_env", expected="the bearer token callers must send")
    try:
        return ContractServer(factory, host=host, port=port, token=token, log=log)
    except (OSError, UnicodeError) as exc:  # a port in use, an unknown host name
        raise InputError(f"{host}:{port}", f"cannot listen: {getattr(exc, 'strerror', '') or exc}",
                         field="port", expected="a free port on an address of this machine"
                         ) from None


def _with_gold(spec: str, options: dict[str, str], gold: Dataset) -> MemorySystem:
    """A registered gold-channel system with the gold opened (a copy per instance)."""
    system = build_system(spec, options)
    assert isinstance(system, GoldReader)
    system.receive_gold(gold.model_copy(deep=True))
    return system


def _exc_text(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises
        text = "<unprintable>"
    return f"{type(exc).__name__}: {text[:300]}"


def _signature(cls: Any) -> inspect.Signature | None:
    """The constructor's signature, or None when Python cannot tell (builtin types)."""
    try:
        return inspect.signature(cls)
    except (TypeError, ValueError):
        return None


def system_options(cls: Any) -> dict[str, tuple[Any, Any]]:
    """Constructor options of a system class: name -> (annotation, default)."""
    sig = _signature(cls)
    if sig is None:
        return {}
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # noqa: BLE001 - unresolved annotations: treat as plain strings
        hints = {}
    out: dict[str, tuple[Any, Any]] = {}
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out[name] = (hints.get(name, p.annotation), p.default)
    return out


def coerce_options(cls: Any, options: dict[str, str], spec: str) -> dict[str, Any]:
    """Strings from `-S key=value` converted to the constructor's annotated types."""
    sig = _signature(cls)
    accepts_any = sig is not None and any(p.kind == p.VAR_KEYWORD
                                          for p in sig.parameters.values())
    known = system_options(cls)
    out: dict[str, Any] = {}
    for key, raw in options.items():
        if key not in known:
            if accepts_any:
                out[key] = raw
                continue
            raise InputError("-S", f"unknown option {key!r} for system {spec}", field=key,
                             expected="one of " + (", ".join(sorted(known)) or "(no options)"))
        ann = known[key][0]
        try:
            out[key] = _coerce(raw, ann)
        except (ValueError, TypeError) as exc:
            raise InputError("-S", f"bad value {raw!r} for option {key!r} of {spec}: {exc}",
                             field=key, expected=_type_name(ann)) from exc
    return out


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _coerce(raw: Any, ann: Any) -> Any:
    if not isinstance(raw, str) or ann is inspect.Parameter.empty or ann is Any:
        return raw
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if type(None) in typing.get_args(ann) and raw.strip().lower() in {"none", "null", ""}:
            return None
        errors = []
        for a in args:
            try:
                return _coerce(raw, a)
            except (ValueError, TypeError) as exc:
                errors.append(str(exc))
        raise ValueError("; ".join(errors))
    if origin is typing.Literal:
        allowed = typing.get_args(ann)
        if raw not in allowed:
            raise ValueError(f"not one of {allowed}")
        return raw
    if ann is bool:
        low = raw.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError("not a boolean")
    if ann is int:
        return int(raw)
    if ann is float:
        return float(raw)
    if ann is str:
        return raw
    if ann in (list, dict) or origin in (list, dict, tuple, set):
        value = json.loads(raw)
        want = origin or ann
        if not isinstance(value, list if want in (list, tuple, set) else dict):
            raise ValueError(f"JSON is not a {want.__name__}")
        return value
    return raw


def _type_name(ann: Any) -> str:
    return getattr(ann, "__name__", None) or str(ann)


__all__ = ["DEFAULT_SYSTEMS", "ENTRY_POINT_GROUP", "REGISTRY", "SystemEntry", "available_systems",
           "build_system", "check_system", "coerce_options", "make_system", "serve_system",
           "system_options"]
