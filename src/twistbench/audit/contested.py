"""Contested credits (TIAP §3.3, §4.4): where Raw misses but Source and Canonical give credit.

Extraction is deterministic over saved traces: for every run and every query with an eligible
id under all three targets, a case is a query whose top k holds no Raw target but holds a
Canonical (hence a Source) target. The credited memory is the best-ranked Canonical hit; the
case carries its text, the question, the gold answer and the source evidence s(q), so a rater
can judge whether the credit is semantically justified.

Labels (one per rater and case): supports | partial | does_not_support. People label through a
CSV file (columns case_id, rater, label; any other column is ignored), which `write_template`
prepares with one row per case and the context columns to read. LLM raters produce the same
rows (llm_raters.py, `twist audit labels --llm`).

Agreement: majority vote per case (a tied top count is "no majority"), Fleiss' kappa on the
cases labelled by every rater (three-class, and binary with supports + partial as "relevant"
against does_not_support, the paper's permissive collapse), and mean pairwise agreement.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from twistbench.audit.metrics import TraceScores
from twistbench.audit.traces import Gold, Lineage, TraceRun, bulk_build
from twistbench.errors import InputError, decode_utf8, load_json, read_bytes
from twistbench.stats import count_matrix, fleiss_kappa, majority, mean_pairwise_agreement

LABELS: tuple[str, ...] = ("supports", "partial", "does_not_support")
BINARY = {"supports": "relevant", "partial": "relevant", "does_not_support": "not_relevant"}
BINARY_NOTE = "binary: supports and partial = relevant; does_not_support = not relevant"
RANK_BUCKETS: tuple[tuple[int, int], ...] = ((1, 5), (6, 20), (21, 60))


def rank_bucket(rank: int) -> str:
    for lo, hi in RANK_BUCKETS:
        if lo <= rank <= hi:
            return f"{lo}-{hi}"
    return f">{RANK_BUCKETS[-1][1]}"


@dataclass
class ContestedCase:
    case_id: str
    run: str
    query_id: str
    conversation: str
    category: str
    question: str
    answer: str
    anchors: list[str]
    evidence: dict[str, str]  # anchor -> source text ("" when neither gold nor lineage has it)
    credited_memory_id: str
    credited_text: str
    credited_sources: list[str]
    credited_rank: int  # rank of the best Canonical hit
    rank_bucket: str
    source_first_hit: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class LineageIndex:
    """What contested cases look up in a store: rows by (conversation, memory id) and the
    source text of a turn (from a raw memory of that turn). Built once per lineage, shared by
    every run stored there."""

    def __init__(self, lineage: Lineage) -> None:
        with bulk_build():  # one key tuple per stored memory, no cycles
            self.rows = lineage.by_key()
            self.raw_text: dict[tuple[str, str], str] = {}
            for r in lineage.rows:
                if r.raw and r.text:
                    for s in r.sources:
                        self.raw_text.setdefault((r.conversation, s), r.text)


def contested_rows(scores: TraceScores) -> np.ndarray:
    """Rows of `scores` that are contested credits: on the shared subset, no Raw hit but a
    Source and a Canonical hit. Only these queries' rankings are needed to extract the cases
    (up to the Canonical first hit, the credited memory)."""
    first = scores.first_hit
    return np.flatnonzero(scores.covered(("raw", "src", "can")) & (first["raw"] == 0)
                          & (first["src"] != 0) & (first["can"] != 0))


def extract_cases(scores: TraceScores, run: TraceRun | None, lineage: Lineage,
                  gold: Gold, index: LineageIndex | None = None,
                  memory_ids: Sequence[str] | None = None) -> list[ContestedCase]:
    """Every raw_miss / source_hit / canonical_hit case of one run, in gold query order.
    `run` needs the traces of the contested queries only (contested_rows), each at least up
    to its Canonical first hit; with `memory_ids` (the scoring lineage's code -> id) the
    credited memory is taken from `scores.credited` instead, and `run` is not read.

    `index`: the lineage's LineageIndex when the caller has one (built here otherwise)."""
    idx = index if index is not None else LineageIndex(lineage)
    rows, raw_text = idx.rows, idx.raw_text
    first = {t: scores.first_hit[t] for t in ("raw", "src", "can")}
    out: list[ContestedCase] = []
    for i in contested_rows(scores).tolist():
        qid = scores.qids[i]
        fs, fc = int(first["src"][i]), int(first["can"][i])
        g = gold.queries[qid]
        mid = memory_ids[int(scores.credited[i])] if memory_ids is not None \
            and scores.credited is not None else run.traces[qid].ids[fc - 1]
        row = rows.get((g.conversation, mid))
        evidence = {a: g.anchor_texts.get(a) or raw_text.get((g.conversation, a), "")
                    for a in g.anchors}
        out.append(ContestedCase(
            case_id=f"{scores.name}|{qid}", run=scores.name, query_id=qid,
            conversation=g.conversation, category=g.category, question=g.question,
            answer=g.answer, anchors=list(g.anchors), evidence=evidence,
            credited_memory_id=mid, credited_text=row.text if row else "",
            credited_sources=list(row.sources) if row else [], credited_rank=fc,
            rank_bucket=rank_bucket(fc), source_first_hit=fs,
        ))
    return out


def write_cases(path: str | Path, cases: Iterable[ContestedCase]) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for c in cases:
            # a shallow field dict: asdict() would deep-copy every list first, for the same JSON
            fh.write(json.dumps({f.name: getattr(c, f.name) for f in _CASE_FIELDS},
                                ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    return n


_CASE_FIELDS = fields(ContestedCase)

# the annotations of ContestedCase (strings: `from __future__ import annotations`)
_CASE_FIELD_TYPES = {"str": str, "int": int, "list[str]": (list, str),
                     "dict[str, str]": (dict, str)}


def _is_a(value: Any, want: Any) -> bool:
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if want is str:
        return isinstance(value, str)
    container, item = want
    if container is list:
        return isinstance(value, list) and all(isinstance(v, item) for v in value)
    return isinstance(value, dict) and all(isinstance(v, item) for v in value.values())


def read_cases(path: str | Path) -> list[ContestedCase]:
    path = Path(path)
    out: list[ContestedCase] = []
    lines = decode_utf8(read_bytes(path, "contested cases file"), str(path)).splitlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        obj = load_json(line, str(path), f"line {lineno}",
                        expected="a line written by write_cases")
        if isinstance(obj, dict):  # name the field, not the dataclass's TypeError
            known = {f.name: f for f in fields(ContestedCase)}
            missing = [n for n, f in known.items() if n not in obj and f.default is MISSING
                       and f.default_factory is MISSING]
            extra = [k for k in obj if k not in known]
            if missing or extra:
                raise InputError(str(path), "missing" if missing else "no such field",
                                 where=f"line {lineno}", field=str((missing or extra)[0]),
                                 expected="a line written by write_cases")
            for name, value in obj.items():  # ids and labels become dict keys later
                want = _CASE_FIELD_TYPES[known[name].type]
                if not _is_a(value, want):
                    raise InputError(str(path), f"is {value!r}"[:200], where=f"line {lineno}",
                                     field=name, expected=known[name].type)
        try:
            out.append(ContestedCase(**obj))
        except (TypeError, ValueError) as exc:
            raise InputError(str(path), f"not a contested case: {exc}", where=f"line {lineno}",
                             expected="a line written by write_cases") from exc
    return out


TEMPLATE_COLUMNS = ("case_id", "rater", "label", "question", "answer", "evidence",
                    "credited_text", "credited_rank")


def write_template(path: str | Path, cases: Sequence[ContestedCase], rater: str = "") -> int:
    """A CSV to fill: one row per case, rater (prefilled if given) and label empty, plus the
    question, gold answer, source evidence and credited memory text to judge."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(TEMPLATE_COLUMNS)
        for c in cases:
            ev = " | ".join(f"[{a}] {t}" for a, t in c.evidence.items())
            w.writerow([c.case_id, rater, "", c.question, c.answer, ev, c.credited_text,
                        c.credited_rank])
    return len(cases)


@dataclass(frozen=True)
class Label:
    case_id: str
    rater: str
    label: str


def read_labels(path: str | Path, known_cases: Iterable[str] | None = None) -> list[Label]:
    """Labels from a CSV with columns case_id, rater, label (others ignored).

    Rows with an empty label (unfilled template rows) are skipped. A bad
    label, a missing rater, an unknown case id or a repeated (case, rater) is an InputError
    naming the file, line and field.
    """
    path = Path(path)
    known = set(known_cases) if known_cases is not None else None
    try:
        fh = open(path, encoding="utf-8", newline="")
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from exc
    with fh:
        try:
            return _read_label_rows(path, fh, known)
        except UnicodeDecodeError as exc:
            raise InputError(str(path), f"not UTF-8 text ({exc.reason})",
                             expected="a UTF-8 CSV file") from None
        except csv.Error as exc:
            raise InputError(str(path), f"not a readable CSV: {exc}",
                             expected="a CSV with case_id, rater, label") from None


# Long fields (a credited memory's text in a filled template) are data, not an attack.
_CSV_FIELD_LIMIT = 64 * 1024 * 1024


def _read_label_rows(path: Path, fh: Any, known: set[str] | None) -> list[Label]:
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    out: list[Label] = []
    seen: set[tuple[str, str]] = set()
    reader = csv.DictReader(fh)
    cols = set(reader.fieldnames or [])
    missing = {"case_id", "rater", "label"} - cols
    if missing:
        raise InputError(str(path), f"missing column(s) {sorted(missing)}", where="line 1",
                         expected="a header with case_id, rater, label")
    for row in reader:
        lineno = reader.line_num
        where = f"line {lineno}"
        case = (row.get("case_id") or "").strip()
        rater = (row.get("rater") or "").strip()
        label = (row.get("label") or "").strip().lower()
        if not label:  # an unfilled template row (rater may be prefilled)
            continue
        if not case:
            raise InputError(str(path), "empty case id", where=where, field="case_id",
                             expected="a case id from the contested cases file")
        if known is not None and case not in known:
            raise InputError(str(path), f"unknown case {case!r}", where=where,
                             field="case_id", expected="a case id from the cases file")
        if not rater:
            raise InputError(str(path), "empty rater", where=where, field="rater",
                             expected="the rater's name")
        if label not in LABELS:
            raise InputError(str(path), f"bad label {row.get('label')!r}", where=where,
                             field="label", expected=" | ".join(LABELS))
        if (case, rater) in seen:
            raise InputError(str(path), f"rater {rater!r} labels case {case!r} twice",
                             where=where, field="case_id", expected="one label per rater")
        seen.add((case, rater))
        out.append(Label(case, rater, label))
    return out


@dataclass
class SemanticAudit:
    """Agreement and majority-vote shares of the contested-credit labels."""

    n_cases: int
    n_labelled: int
    raters: list[str]
    labels_per_rater: dict[str, int]
    majority_counts: dict[str, int]  # supports / partial / does_not_support / no_majority
    majority_shares: dict[str, float]  # over labelled cases with a majority
    by_run: dict[str, dict[str, int]] = field(default_factory=dict)
    by_bucket: dict[str, dict[str, int]] = field(default_factory=dict)
    n_complete: int = 0  # cases labelled by every rater (the kappa sample)
    fleiss_kappa_three: float = math.nan
    fleiss_kappa_binary: float = math.nan
    pairwise_agreement_three: float = math.nan
    pairwise_agreement_binary: float = math.nan
    binary_mapping: str = BINARY_NOTE
    majority_per_case: dict[str, str | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def semantic_audit(cases: Sequence[ContestedCase], labels: Sequence[Label]) -> SemanticAudit:
    """Majority vote, Fleiss' kappa (three-class and binary) and mean pairwise agreement."""
    by_case: dict[str, dict[str, str]] = defaultdict(dict)
    by_rater: dict[str, dict[str, str]] = defaultdict(dict)
    case_ids = {c.case_id for c in cases}
    for lab in labels:
        if lab.case_id not in case_ids:
            continue
        by_case[lab.case_id][lab.rater] = lab.label
        by_rater[lab.rater][lab.case_id] = lab.label
    raters = sorted(by_rater)
    counts: Counter[str] = Counter()
    per_case: dict[str, str | None] = {}
    by_run: dict[str, Counter[str]] = defaultdict(Counter)
    by_bucket: dict[str, Counter[str]] = defaultdict(Counter)
    for c in cases:
        labs = by_case.get(c.case_id)
        if not labs:
            continue
        m = majority(list(labs.values()))
        per_case[c.case_id] = m
        key = m or "no_majority"
        counts[key] += 1
        by_run[c.run][key] += 1
        by_bucket[c.rank_bucket][key] += 1
    decided = sum(counts[k] for k in LABELS)
    shares = {k: (counts[k] / decided if decided else math.nan) for k in LABELS}
    res = SemanticAudit(
        n_cases=len(cases), n_labelled=len(per_case), raters=raters,
        labels_per_rater={r: len(v) for r, v in by_rater.items()},
        majority_counts={k: counts[k] for k in (*LABELS, "no_majority")},
        majority_shares=shares,
        by_run={r: dict(v) for r, v in by_run.items()},
        by_bucket={b: dict(v) for b, v in by_bucket.items()},
        majority_per_case=per_case,
    )
    if len(raters) >= 2:
        complete = {cid: [labs[r] for r in raters] for cid, labs in by_case.items()
                    if len(labs) == len(raters)}
        res.n_complete = len(complete)
        if complete:
            res.fleiss_kappa_three = fleiss_kappa(count_matrix(complete, LABELS))
            binary = {cid: [BINARY[x] for x in v] for cid, v in complete.items()}
            res.fleiss_kappa_binary = fleiss_kappa(
                count_matrix(binary, ("relevant", "not_relevant")))
        res.pairwise_agreement_three = mean_pairwise_agreement(by_rater)[0]
        res.pairwise_agreement_binary = mean_pairwise_agreement(
            {r: {c: BINARY[x] for c, x in v.items()} for r, v in by_rater.items()})[0]
    return res


def semantic_audit_files(cases_path: str | Path, label_paths: Sequence[str | Path],
                         out_path: str | Path | None = None,
                         extra_labels: Sequence[Label] = ()) -> SemanticAudit:
    """The semantic audit from a saved contested_cases.jsonl and rater CSVs (for re-running
    the agreement statistics as labels arrive, without re-auditing the traces), plus
    `extra_labels` (LLM raters'). Writes the result as JSON to `out_path` when given."""
    cases = read_cases(cases_path)
    known = {c.case_id for c in cases}
    labels = [lab for p in label_paths for lab in read_labels(p, known)] + list(extra_labels)
    res = semantic_audit(cases, labels)
    if out_path is not None:
        data = {k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in res.as_dict().items()}  # NaN is not JSON
        Path(out_path).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n",
                                  encoding="utf-8")
    return res
