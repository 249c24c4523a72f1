"""Reference systems and the registry that `twist run --system` resolves.

Built-in names: flat-rag, fact-rag, heuristic, oracle. Any other spec of the form
"package.module:Class" is imported and constructed with the `-S key=value` options, coerced to
the types the constructor's annotations declare. Only registry entries with gold_channel=True
(the oracle) ever receive gold, through contract.GoldReader; an imported class never does.
"""

from __future__ import annotations

import importlib
import inspect
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twistbench.contract import MemorySystem
from twistbench.errors import InputError


@dataclass(frozen=True)
class SystemEntry:
    name: str
    factory: Callable[..., MemorySystem]
    gold_channel: bool
    description: str


def _flat_rag(**kw: Any) -> MemorySystem:
    from twistbench.systems.flat_rag import FlatRAG

    return FlatRAG(**kw)


def _fact_rag(**kw: Any) -> MemorySystem:
    from twistbench.systems.fact_rag import FactRAG

    return FactRAG(**kw)


def _oracle(**kw: Any) -> MemorySystem:
    from twistbench.systems.oracle import Oracle

    return Oracle(**kw)


def _heuristic(**kw: Any) -> MemorySystem:
    from twistbench.systems.heuristic import HeuristicSystem

    return HeuristicSystem(**kw)


def _class_of(name: str) -> type:
    mod, cls = {
        "flat-rag": ("twistbench.systems.flat_rag", "FlatRAG"),
        "fact-rag": ("twistbench.systems.fact_rag", "FactRAG"),
        "oracle": ("twistbench.systems.oracle", "Oracle"),
        "heuristic": ("twistbench.systems.heuristic", "HeuristicSystem"),
    }[name]
    return getattr(importlib.import_module(mod), cls)


REGISTRY: dict[str, SystemEntry] = {
    "flat-rag": SystemEntry("flat-rag", _flat_rag, False,
                            "stores raw turns; recall = top retrieved turn(s); no contradiction "
                            "machinery; drafts always aligned without an LLM"),
    "fact-rag": SystemEntry("fact-rag", _fact_rag, False,
                            "Mem0-style: dated atomic facts per turn, recall prefers the most "
                            "recent matching fact; no conflict detection"),
    "heuristic": SystemEntry("heuristic", _heuristic, False,
                             "non-LLM contradiction machinery: same-speaker similarity + stance "
                             "change; supersession; write-time PII/crisis governance"),
    "oracle": SystemEntry("oracle", _oracle, True,
                          "answers from the gold (explicit gold channel): the ceiling check"),
}

DEFAULT_SYSTEMS = ("flat-rag", "fact-rag", "heuristic", "oracle")


def make_system(spec: str, options: dict[str, str] | None = None
                ) -> tuple[MemorySystem, SystemEntry]:
    """Build a system from a registry name or "module:Class", with string options coerced.

    Raises InputError for an unknown name, an import failure, an unknown option (naming the
    accepted ones) or a value that does not convert to the annotated type.
    """
    options = dict(options or {})
    if spec in REGISTRY:
        entry = REGISTRY[spec]
        cls: Any = _class_of(spec)
    elif ":" in spec:
        mod_name, _, cls_name = spec.partition(":")
        try:
            mod = importlib.import_module(mod_name)
        except Exception as exc:  # noqa: BLE001 - any import failure is the user's input
            raise InputError("--system", f"cannot import module {mod_name!r}: {exc}",
                             field="system",
                             expected="an importable 'package.module:Class'") from exc
        cls = getattr(mod, cls_name, None)
        if cls is None or not callable(cls):
            raise InputError("--system", f"module {mod_name!r} has no class {cls_name!r}",
                             field="system", expected="'package.module:Class'")
        doc = (inspect.getdoc(cls) or "").splitlines()
        entry = SystemEntry(spec, cls, False, doc[0] if doc else "")
    else:
        raise InputError("--system", f"unknown system {spec!r}", field="system",
                         expected=f"one of {', '.join(REGISTRY)} or 'package.module:Class'")
    kwargs = coerce_options(cls, options, spec)
    try:
        system = cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise InputError("-S", f"system {spec}: {exc}", expected="valid options") from exc
    if not isinstance(system, MemorySystem):
        raise InputError("--system", f"{spec} does not implement the MemorySystem contract",
                         expected="name, capabilities and the contract calls (subclass "
                                  "twistbench.contract.BaseSystem)")
    return system, entry


def system_options(cls: Any) -> dict[str, tuple[Any, Any]]:
    """Constructor options of a system class: name -> (annotation, default)."""
    sig = inspect.signature(cls)
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
    sig = inspect.signature(cls)
    accepts_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
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


__all__ = ["DEFAULT_SYSTEMS", "REGISTRY", "SystemEntry", "coerce_options", "make_system",
           "system_options"]
