"""Where data lives: the committed keys, and the shared data beside the checkout.

The one place that knows these paths. Committed keys are the repo's data/ in a checkout and
twistbench/_data in an installed wheel (pyproject force-includes data/ there). Public data that
is not ours to redistribute (the Track B key, the LoCoMo errata audit) is looked up in
../shared/data beside the checkout; TWIST_SHARED_DATA overrides that folder.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

from twistbench.errors import InputError

_REPO = Path(__file__).resolve().parents[3]

CS_KEY_FILE = "twist-cs-1.0.json"
CS_CRISIS_KEY_FILE = "twist-cs-1.0-crisis.json"
CS2_KEY_FILE = "twist-cs-2.0.json"
CS2_CRISIS_KEY_FILE = "twist-cs-2.0-crisis.json"
LOCOMO_KEY_FILE = "twist-locomo-1.0.json"
LOCOMO_CRISIS_KEY_FILE = "twist-locomo-1.0-crisis.json"
LOCOMO2_KEY_FILE = "twist-locomo-2.0.json"
LOCOMO2_CRISIS_KEY_FILE = "twist-locomo-2.0-crisis.json"
TWIST_B_KEY = "twist-b/track_b_v1.0_test.jsonl"
LOCOMO_AUDIT_ERRATA = "locomo-audit/errors.json"
# Judge decoys of the LoCoMo audit: a wrong answer per non-adversarial question, in two styles.
LOCOMO_DECOYS = {"specific_but_wrong": "locomo-audit/decoys/specific_but_wrong.json",
                 "vague_but_topical": "locomo-audit/decoys/vague_but_topical.json"}


def data_dir() -> Path:
    """Where committed keys live: the repo's data/ in a checkout, twistbench/_data in a wheel."""
    repo = _REPO / "data"
    if repo.is_dir():
        return repo
    return Path(str(resources.files("twistbench") / "_data"))


def repo_data_dir() -> Path:
    """The checkout's data/ folder, where `twist build` writes keys by default."""
    return _REPO / "data"


def cs_key_path(include_crisis: bool = False) -> Path:
    """The committed TWIST-CS key (the crisis variant with include_crisis)."""
    return data_dir() / (CS_CRISIS_KEY_FILE if include_crisis else CS_KEY_FILE)


def cs2_key_path(include_crisis: bool = False) -> Path:
    """The committed TWIST-CS 2.0 key (the crisis variant with include_crisis)."""
    return data_dir() / (CS2_CRISIS_KEY_FILE if include_crisis else CS2_KEY_FILE)


def locomo_key_path(include_crisis: bool = False) -> Path:
    """The committed TWIST-LoCoMo key (the crisis variant with include_crisis)."""
    return data_dir() / (LOCOMO_CRISIS_KEY_FILE if include_crisis else LOCOMO_KEY_FILE)


def locomo2_key_path(include_crisis: bool = False) -> Path:
    """The committed TWIST-LoCoMo 2.0 key (the crisis variant with include_crisis)."""
    return data_dir() / (LOCOMO2_CRISIS_KEY_FILE if include_crisis else LOCOMO2_KEY_FILE)


SHIPPED_VECTORS_DIR = "embeddings"


def shipped_vectors_path(key_file: Path, model_id: str) -> Path:
    """Where the vectors of a committed key (and of its crisis variant) under one embedder
    ship: data/embeddings/<key name>.<first 12 hex of the model id's sha256>.npz."""
    short = hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:12]
    stem = key_file.name.removesuffix(".json")
    return key_file.parent / SHIPPED_VECTORS_DIR / f"{stem}.{short}.npz"


def shipped_vectors_files(key_file: Path) -> list[Path]:
    """The shipped vector files of a committed key, one per embedder they were written by."""
    folder = key_file.parent / SHIPPED_VECTORS_DIR
    stem = key_file.name.removesuffix(".json")
    # <stem>.<model>.npz only: the key with crisis plants has a stem of its own
    return sorted(p for p in folder.glob(f"{stem}.*.npz")
                  if p.name.count(".") == stem.count(".") + 2)


def shared_data_dir() -> Path:
    """../shared/data beside the checkout, or TWIST_SHARED_DATA when set."""
    env = os.environ.get("TWIST_SHARED_DATA")
    return Path(env) if env else _REPO.parent / "shared" / "data"


def resolve_shared_or_path(rel: str) -> Path:
    """A public key that is not ours to redistribute: looked up in the shared data folder."""
    path = shared_data_dir() / rel
    if not path.exists():
        raise InputError(str(path), "public key file not found",
                         expected="set TWIST_SHARED_DATA to the folder holding " + rel)
    return path
