"""Errata overlays for LoCoMo's answer key: a versioned correction of answers and evidence.

The one overlay we know is the Penfield Labs audit (github.com/dial481/locomo-audit, commit
9493fb4): `errors.json`, 156 entries `{question_id "locomo_<conv index>_qa<i>", question,
golden_answer, category, error_type, cited_evidence, correct_evidence, reasoning, correct_answer}`.

Policy (why): the audit sorts its entries into WRONG_CITATION (57, the answer is right and only
the citation is wrong; their `correct_answer` restates the gold with commentary such as "(answer
is correct, citation is wrong)") and answer errors (99: HALLUCINATION, TEMPORAL_ERROR,
ATTRIBUTION_ERROR, AMBIGUOUS, INCOMPLETE). WRONG_CITATION entries therefore override evidence
only; the others override answer and evidence. An entry whose question text differs from the
LoCoMo item it names is not applied (it was written for another file) and is reported.

The corrections go through the key-version machinery of datasets/versions.py (one `fix` change
per question, applied by `apply_changes`), and a released audit has a short version name:
`audit-1` is locomo-audit@9493fb4, so `-d locomo+audit-1` (or any LoCoMo-based dataset name +
`+audit-1`) names the same corrected key as `--errata locomo-audit` with that file, pinned: a
different errors.json is refused under that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twistbench.datasets.keyfile import sha256_bytes, sha256_file
from twistbench.datasets.paths import LOCOMO_AUDIT_ERRATA, shared_data_dir
from twistbench.datasets.versions import Change, apply_changes
from twistbench.errors import InputError, load_json, read_bytes
from twistbench.model import Dataset, QAItem

ERRATA_NAME = "locomo-audit"
# sha256 of errors.json -> version id; other files get "<name>@sha256:<12 hex>".
KNOWN_ERRATA = {
    "f298ef46263fada20688a1d672be37d4f488c6da3b19343eea55ae5c1b5fe55e": "locomo-audit@9493fb4",
}
# Released audits by short version name (`-d locomo+audit-1`).
AUDIT_VERSIONS = {"audit-1": "locomo-audit@9493fb4"}
EVIDENCE_ONLY_TYPES = frozenset({"WRONG_CITATION"})
_QID = re.compile(r"^locomo_(\d+)_qa(\d+)$")
_TURN = re.compile(r"^D(\d+):(\d+)$")


@dataclass
class ErrataReport:
    """What an overlay changed: counts plus one line per touched question."""

    version: str  # "locomo-audit@9493fb4"
    path: str
    sha256: str
    entries: int = 0
    answer_changed: int = 0  # questions whose answer text changed (evidence may change too)
    evidence_only_changed: int = 0  # questions whose evidence changed and answer did not
    unchanged: int = 0  # entries that matched but changed nothing (already corrected)
    not_applied: list[dict[str, str]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return self.answer_changed + self.evidence_only_changed

    @property
    def version_tag(self) -> str:
        """The version id with '@' as '-', for dataset versions ("locomo-audit-9493fb4")."""
        return self.version.replace("@", "-").replace(":", "-")

    def as_dict(self) -> dict[str, Any]:
        return {"version": self.version, "path": self.path, "sha256": self.sha256,
                "entries": self.entries, "answer_changed": self.answer_changed,
                "evidence_only_changed": self.evidence_only_changed, "changed": self.changed,
                "unchanged": self.unchanged, "not_applied": self.not_applied,
                "changes": self.changes}

    def render(self) -> str:
        text = (f"errata {self.version}: {self.changed} of {self.entries} entries changed a "
                f"question "
                f"({self.answer_changed} answers, {self.evidence_only_changed} evidence only)")
        if self.not_applied:
            text += f"; {len(self.not_applied)} not applied"
        return text


def resolve_errata_path(errata: str | Path, locomo_path: str | Path | None = None) -> Path:
    """`--errata` value -> file. "locomo-audit" means ../locomo-audit/errors.json next to the
    folder holding locomo10.json (the layout of the shared data), else in the shared data folder
    (datasets/paths.py); anything else is a path."""
    if str(errata) == ERRATA_NAME:
        candidates: list[Path] = []
        if locomo_path is not None:
            beside = Path(locomo_path).resolve().parent.parent
            candidates.append(beside / "locomo-audit" / "errors.json")
        candidates.append(shared_data_dir() / LOCOMO_AUDIT_ERRATA)
        for c in candidates:
            if c.exists():
                return c
        raise InputError(str(candidates[0]), "the locomo-audit errata file is not there",
                         field="--errata", expected="locomo-audit/errors.json beside the locomo "
                         "folder, or a path to errors.json")
    path = Path(errata)
    if not path.exists():
        raise InputError(str(path), "no such errata file", field="--errata",
                         expected=f"{ERRATA_NAME!r} or a path to errors.json")
    return path


def read_errata(path: str | Path) -> tuple[list[dict[str, Any]], str, str]:
    """Return (entries, version id, sha256); InputError names the entry and field on bad input."""
    path = Path(path)
    data = read_bytes(path, "errata file")
    digest = sha256_bytes(data)
    entries = load_json(data, str(path), expected="a JSON list")
    if not isinstance(entries, list):
        raise InputError(str(path), "top level is not a list", expected="a JSON list of entries")
    for i, e in enumerate(entries):
        where = f"entry [{i}]"
        if not isinstance(e, dict):
            raise InputError(str(path), "not an object", where=where, expected="an errata entry")
        qid = e.get("question_id")
        if not isinstance(qid, str) or not _QID.match(qid):
            raise InputError(str(path), f"bad question_id {qid!r}", where=where,
                             field="question_id",
                             expected="locomo_<conversation index>_qa<index>")
        if "correct_answer" not in e and "correct_evidence" not in e:
            raise InputError(str(path), "nothing to correct", where=f"{where} ({qid})",
                             field="correct_answer",
                             expected="correct_answer and/or correct_evidence")
        ev = e.get("correct_evidence", [])
        if not isinstance(ev, list):
            raise InputError(str(path), "not a list", where=f"{where} ({qid})",
                             field="correct_evidence", expected="a list of turn ids")
    version = KNOWN_ERRATA.get(digest, f"{ERRATA_NAME}@sha256:{digest[:12]}")
    return entries, version, digest


def _norm(text: str | None) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", (text or "").lower()).split())


def apply_errata(dataset_or_qa: Dataset | list[QAItem], errata_path: str | Path
                 ) -> tuple[list[QAItem], ErrataReport]:
    """Corrected copies of the QA items and what changed. The input is not modified.

    Items are found by their audit id (QAItem.meta["audit_id"], set by datasets/locomo.py) or, for
    items without one, by conversation order. Evidence ids that name no turn of the item's
    conversation (checked only when a Dataset is given) are dropped and the entry listed under
    not_applied with the reason.
    """
    entries, version, digest = read_errata(errata_path)
    if isinstance(dataset_or_qa, Dataset):
        qa = list(dataset_or_qa.qa)
        known: dict[str, set[str]] | None = {c.id: set(c.event_index())
                                             for c in dataset_or_qa.conversations}
    else:
        qa = list(dataset_or_qa)
        known = None
    by_audit = {it.meta.get("audit_id"): i for i, it in enumerate(qa) if it.meta.get("audit_id")}
    rep = ErrataReport(version=version, path=str(errata_path), sha256=digest, entries=len(entries))
    changes: list[Change] = []
    fixed: set[int] = set()
    for e in entries:
        qid = e["question_id"]
        pos = by_audit.get(qid)
        if pos is None or pos in fixed:
            why = "no such question" if pos is None else "a second entry for the question"
            rep.not_applied.append({"question_id": qid, "reason": why})
            continue
        item = qa[pos]
        if _norm(e.get("question")) and _norm(e.get("question")) != _norm(item.question):
            rep.not_applied.append({"question_id": qid, "item": item.id,
                                    "reason": "question text differs from the LoCoMo item"})
            continue
        etype = str(e.get("error_type", ""))
        new_answer = item.answer
        if etype not in EVIDENCE_ONLY_TYPES and "correct_answer" in e:
            new_answer = str(e["correct_answer"])
        new_ev = item.evidence
        if "correct_evidence" in e:
            ids = [str(x).strip() for x in e["correct_evidence"]]
            bad = [x for x in ids if not _TURN.match(x)
                   or (known is not None and x not in known.get(item.conversation, set()))]
            if bad:
                rep.not_applied.append({"question_id": qid, "item": item.id,
                                        "reason": f"evidence ids dropped: {bad}"})
            good = [x for x in dict.fromkeys(ids) if x not in bad]
            if good:
                new_ev = good
        ans_changed = _norm(new_answer) != _norm(item.answer)
        ev_changed = set(new_ev) != set(item.evidence)
        if not ans_changed and not ev_changed:
            rep.unchanged += 1
            continue
        if ans_changed:
            rep.answer_changed += 1
        else:
            rep.evidence_only_changed += 1
        meta = dict(item.meta)
        meta["errata"] = {"version": version, "error_type": etype, "answer_was": item.answer,
                          "evidence_was": list(item.evidence)}
        fixed.add(pos)
        changes.append(Change(item=item.id, action="fix", why=f"{version} {qid} {etype}",
                              fields={"answer": new_answer, "evidence": list(new_ev),
                                      "meta": meta}))
        rep.changes.append({"item": item.id, "question_id": qid, "error_type": etype,
                            "answer_changed": ans_changed, "evidence_changed": ev_changed})
    new_lists, _ = apply_changes({"qa": [q.model_dump(mode="json") for q in qa]}, changes,
                                 str(errata_path))
    by_id = {q["id"]: q for q in new_lists["qa"]}
    out = [QAItem.model_validate(by_id[q.id]) if i in fixed else q for i, q in enumerate(qa)]
    return out, rep


def pinned_audit(short: str, locomo_path: str | Path | None) -> Path:
    """The errors.json of a released audit (`audit-1`), refused when the file found is another
    version (its sha256 is not the one that name stands for)."""
    if short not in AUDIT_VERSIONS:
        raise InputError(short, "unknown LoCoMo audit version",
                         expected=" | ".join(AUDIT_VERSIONS))
    path = resolve_errata_path(ERRATA_NAME, locomo_path)
    found = KNOWN_ERRATA.get(sha256_file(path))
    if found != AUDIT_VERSIONS[short]:
        raise InputError(str(path), f"this errors.json is not {AUDIT_VERSIONS[short]} "
                         f"({short})", field="sha256",
                         expected=f"the audit file released as {AUDIT_VERSIONS[short]}")
    return path


def overlay_errata(qa: list[QAItem], errata: str, locomo_path: str | Path, version: str,
                   key_sha256: str) -> tuple[list[QAItem], str, str, dict[str, Any]]:
    """Apply the `--errata` overlay to LoCoMo QA at load time.

    Returns (corrected QA, dataset version naming the overlay, key sha256 covering the base key
    and the overlay file, the ErrataReport as a dict for Dataset.meta["errata"]).
    """
    epath = resolve_errata_path(errata, locomo_path)
    qa, erep = apply_errata(qa, epath)
    digest = sha256_bytes(f"{key_sha256}+{sha256_file(epath)}".encode())
    return qa, f"{version}+{erep.version_tag}", digest, erep.as_dict()
