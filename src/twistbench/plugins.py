"""Resolving a plugin class (a memory system, a judge) from what the user typed.

In order: a name in the built-in table; a name registered by an installed package under the
entry-point group (`[project.entry-points."twistbench.systems"] my-store = "pkg.mod:Class"`);
"package.module:Class"; "path/to/file.py:Class". A separate package can therefore add a system
or a judge without touching twistbench.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from twistbench.errors import InputError


def entry_points(group: str) -> dict[str, metadata.EntryPoint]:
    """Entry points of `group` registered by installed packages, by name."""
    return {ep.name: ep for ep in metadata.entry_points(group=group)}


def import_target(target: str, flag: str) -> Any:
    """The object named by "package.module:Attr" or "path/to/file.py:Attr"."""
    mod_name, _, attr = target.rpartition(":")
    if not mod_name or not attr:
        raise InputError(flag, f"{target!r} names no class", expected="'package.module:Class' "
                         "or 'path/to/file.py:Class'")
    if mod_name.endswith(".py") or "/" in mod_name or "\\" in mod_name:
        module = _import_file(Path(mod_name), flag)
    else:
        try:
            module = importlib.import_module(mod_name)
        except Exception as exc:  # noqa: BLE001 - any import failure is the user's input
            raise InputError(flag, f"cannot import module {mod_name!r}: {exc}",
                             field=flag.lstrip("-"),
                             expected="an importable 'package.module:Class'") from exc
    obj = getattr(module, attr, None)
    if obj is None or not callable(obj):
        raise InputError(flag, f"module {mod_name!r} has no class {attr!r}",
                         field=flag.lstrip("-"), expected="'package.module:Class'")
    return obj


def _import_file(path: Path, flag: str) -> Any:
    if not path.is_file():
        raise InputError(str(path), "no such file", field=flag.lstrip("-"),
                         expected="'path/to/file.py:Class'")
    name = f"twistbench_plugin_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(str(path), "not a Python file", field=flag.lstrip("-"),
                         expected="a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's file is their input
        del sys.modules[name]
        raise InputError(str(path), f"cannot import: {type(exc).__name__}: {exc}",
                         field=flag.lstrip("-"), expected="an importable Python file") from exc
    return module


def resolve(spec: str, *, table: Mapping[str, str], group: str, flag: str, what: str) -> Any:
    """The class `spec` names: a built-in name (table: name -> "module:Class"), an entry point
    of `group`, or "module:Class" / "file.py:Class". InputError names the accepted forms."""
    if spec in table:
        return import_target(table[spec], flag)
    eps = entry_points(group)
    if spec in eps:
        try:
            return eps[spec].load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin package is the user's input
            raise InputError(flag, f"{what} {spec!r} (entry point {eps[spec].value}) does not "
                             f"load: {exc}", field=flag.lstrip("-"),
                             expected="an installed, importable plugin") from exc
    if ":" in spec:
        return import_target(spec, flag)
    names = sorted({*table, *eps})
    raise InputError(flag, f"unknown {what} {spec!r}", field=flag.lstrip("-"),
                     expected=f"one of {', '.join(names)} or 'package.module:Class' or "
                     "'path/to/file.py:Class'")
