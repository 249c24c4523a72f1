"""The committed TWIST-CS key (six synthetic customer-success workspaces) as a Dataset.

The generator is itemgen/cs_workspace.py (`twist build cs`); this module only reads its keys.
"""

from __future__ import annotations

from pathlib import Path

from twistbench.datasets.keyfile import read_key
from twistbench.datasets.paths import cs_key_path
from twistbench.errors import InputError, pydantic_to_input_error
from twistbench.model import Dataset

NAME = "twist-cs"
VERSION = "twist-cs-1.0"
VERSION_CRISIS = "twist-cs-1.0+crisis"


def load_cs_dataset(path: Path | None = None, include_crisis: bool = False) -> Dataset:
    """Load a TWIST-CS key (default: the committed one) as a Dataset.

    path: a key file written by `twist build cs`; None = the committed key (the crisis key when
    include_crisis). The .sha256 file beside it is checked; Dataset.key_sha256 is the key file's
    sha256. Raises InputError naming the file and the problem.
    """
    path = Path(path) if path is not None else cs_key_path(include_crisis)
    doc, digest = read_key(path)
    if doc["name"] != NAME:
        raise InputError(str(path), f"key is {doc['name']!r}", field="name",
                         expected=f"{NAME!r}")
    payload = doc["payload"]
    if not isinstance(payload, dict):
        raise InputError(str(path), "payload is not an object", field="payload",
                         expected="a Dataset object")
    try:
        ds = Dataset.model_validate({**payload, "key_sha256": digest})
    except Exception as exc:  # pydantic.ValidationError
        raise pydantic_to_input_error(str(path), "payload", exc) from exc
    if ds.version != doc["version"]:
        raise InputError(str(path),
                         f"payload version {ds.version!r} differs from {doc['version']!r}",
                         field="version", expected="the same version in header and payload")
    return ds
