"""Reading LoCoMo (`locomo10.json`, Maharana et al. 2024) into our records.

The file is read from a path the user gives (it is CC BY-NC 4.0 and never shipped with twistbench).

Mapping (kept stable: the TWIST-LoCoMo key and the errata overlay depend on it):
- Conversation.id = `sample_id` ("conv-26"); speakers = [speaker_a, speaker_b].
- Event.id = `dia_id` ("D1:3"); session = the LoCoMo session number; channel "chat";
  timestamp = the parsed session date ("1:56 pm on 8 May, 2023") + one minute per turn index, so
  turns keep their order and injected turns (itemgen/locomo_inject.py) can sit between them at
  whole seconds; Event.meta["date_text"] = the raw session date string.
- Image turns: text = turn text + " [shares an image: <blip_caption>]". A memory system ingests
  what a chat user would see; the caption is the only textual stand-in for the photo. `img_url`,
  `query` (the image-search query LoCoMo used to fetch the photo, which no memory system sees) and
  `re-download` stay in Event.meta and never enter the text.
- QAItem.id = "<sample_id>:qa<0-based index>" (the audit's question_id "locomo_<conv index>_qa<i>"
  names the same item); answer = str(answer) (6 answers are integers); category-5 items keep
  `adversarial_answer` and answer None when the file has no `answer`.
- Sessions come from the `session_N` lists; a `session_N_date_time` without its list (conv-26
  names sessions 20-35 that do not exist) or an empty list is skipped and reported.

Known defects are handled without crashing and listed in LocomoReport (see SOURCE.md).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twistbench.datasets.errata import overlay_errata
from twistbench.datasets.keyfile import sha256_bytes
from twistbench.errors import InputError, load_json, pydantic_to_input_error, read_bytes
from twistbench.model import Conversation, Dataset, Event, QAItem, qa_corpus

# sha256 of locomo10.json as released (snap-research/locomo, blob d95b8724...).
LOCOMO_RELEASE_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"
TURN_ID_RE = re.compile(r"^D(\d+):(\d+)$")
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                  5: "adversarial"}
IMAGE_MARK = " [shares an image: {caption}]"
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_KEY = re.compile(r"^session_(\d+)_date_time$")


@dataclass
class Defect:
    """One problem found in the file, with where it is."""

    kind: str  # malformed_evidence | unknown_evidence | empty_evidence | missing_answer | ...
    conversation: str
    where: str  # "qa[37]", "session_20"
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "conversation": self.conversation, "where": self.where,
                "detail": self.detail}


@dataclass
class LocomoReport:
    """What the loader found: counts, the sha256 check and every defect it handled."""

    sha256: str
    matches_release: bool
    conversations: int = 0
    sessions: int = 0
    turns: int = 0
    image_turns: int = 0
    qa_by_category: dict[int, int] = field(default_factory=dict)
    defects: list[Defect] = field(default_factory=list)

    @property
    def qa(self) -> int:
        return sum(self.qa_by_category.values())

    def defect_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(d.kind for d in self.defects).items()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "sha256": self.sha256, "matches_release": self.matches_release,
            "conversations": self.conversations, "sessions": self.sessions, "turns": self.turns,
            "image_turns": self.image_turns,
            "qa_by_category": {str(k): v for k, v in sorted(self.qa_by_category.items())},
            "qa": self.qa, "defect_counts": self.defect_counts(),
            "defects": [d.as_dict() for d in self.defects],
        }

    def render(self) -> str:
        """Plain-text summary for the CLI."""
        lines = [
            f"locomo10.json sha256 {self.sha256[:12]}… "
            + ("(matches the LoCoMo release)" if self.matches_release
               else f"(DIFFERS from the LoCoMo release {LOCOMO_RELEASE_SHA256[:12]}…)"),
            f"{self.conversations} conversations, {self.sessions} sessions, {self.turns} turns "
            f"({self.image_turns} with an image caption), {self.qa} QA "
            + "(" + ", ".join(f"{CATEGORY_NAMES[c]} {n}"
                              for c, n in sorted(self.qa_by_category.items()))
            + ")",
        ]
        if self.defects:
            lines.append("handled defects: "
                         + ", ".join(f"{k} {n}" for k, n in self.defect_counts().items()))
        return "\n".join(lines)


@dataclass
class LocomoCorpus:
    """LoCoMo as records, plus the raw per-conversation side fields the injector needs."""

    conversations: list[Conversation]
    qa: list[QAItem]
    report: LocomoReport
    # sample_id -> {"observation": {...}, "session_summary": {...}, "event_summary": {...}}
    side: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: str = ""

    @property
    def sha256(self) -> str:
        return self.report.sha256

    @property
    def matches_release(self) -> bool:
        return self.report.matches_release

    def conversation(self, cid: str) -> Conversation:
        for c in self.conversations:
            if c.id == cid:
                return c
        raise KeyError(cid)


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> datetime(2023, 5, 8, 13, 56)."""
    return datetime.strptime(text.strip(), DATE_FORMAT)


def turn_timestamp(session_date: datetime, turn_index: int) -> datetime:
    """Timestamp of the turn at 0-based position `turn_index` in its session (one minute apart)."""
    return session_date + timedelta(minutes=turn_index)


def ingested_text(turn: dict[str, Any]) -> str:
    """The text a memory system ingests for one LoCoMo turn (caption appended for image turns)."""
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    if caption:
        text += IMAGE_MARK.format(caption=str(caption).strip())
    return text


def normalise_evidence(raw: Any, known: set[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Split, repair and check one QA evidence entry.

    Returns (ids kept, [(raw piece, what happened)]). Recoverable forms: several ids joined by
    ';' or spaces, a leading-zero turn ("D30:05" -> "D30:5"), a stray colon ("D:11:26" ->
    "D11:26"). Anything else, or an id naming no turn, is dropped and listed.
    """
    kept: list[str] = []
    notes: list[tuple[str, str]] = []
    for piece in re.split(r"[;,\s]+", str(raw).strip()):
        if not piece:
            continue
        fixed = piece
        m = re.fullmatch(r"D:?(\d+):(\d+)", piece)
        if m:
            fixed = f"D{int(m.group(1))}:{int(m.group(2))}"
        if not TURN_ID_RE.match(fixed):
            notes.append((piece, "dropped: not a turn id"))
            continue
        if fixed not in known:
            notes.append((piece, f"dropped: {fixed} names no turn"))
            continue
        kept.append(fixed)
    if kept and kept != [str(raw)]:
        notes.append((str(raw), "normalised to " + ", ".join(kept)))
    return kept, notes


def load_locomo(path: str | Path) -> LocomoCorpus:
    """Read locomo10.json into Conversations and QAItems, reporting every defect handled.

    Raises InputError for a file that is not LoCoMo-shaped (not a JSON list of samples with
    `sample_id`, `conversation`, `qa`). A sha256 different from the release is not an error:
    it is reported (LocomoReport.matches_release False) so the caller can warn.
    """
    path = Path(path)
    data = read_bytes(path, "LoCoMo file")
    digest = sha256_bytes(data)
    samples = load_json(data, str(path), expected="locomo10.json")
    if not isinstance(samples, list):
        raise InputError(str(path), "top level is not a list", expected="a JSON list of samples")
    if not samples:
        raise InputError(str(path), "no samples", expected="a JSON list of LoCoMo samples")
    report = LocomoReport(sha256=digest, matches_release=digest == LOCOMO_RELEASE_SHA256)
    convs: list[Conversation] = []
    qa: list[QAItem] = []
    side: dict[str, dict[str, Any]] = {}
    cats: Counter[int] = Counter()
    first_at: dict[str, int] = {}
    for ci, sample in enumerate(samples):
        where = f"sample [{ci}]"
        if not isinstance(sample, dict):
            raise InputError(str(path), "not an object", where=where, expected="a LoCoMo sample")
        for fld in ("sample_id", "conversation", "qa"):
            if fld not in sample:
                raise InputError(str(path), "missing", where=where, field=fld, expected="a value")
        cid = sample["sample_id"]
        if not isinstance(cid, (str, int)) or isinstance(cid, bool) or not str(cid).strip():
            raise InputError(str(path), f"is {cid!r}", where=where, field="sample_id",
                             expected="a non-empty conversation id like 'conv-26'")
        cid = str(cid)
        if cid in first_at:
            raise InputError(str(path), f"sample_id {cid!r} repeats sample [{first_at[cid]}]",
                             where=where, field="sample_id", expected="unique sample ids")
        first_at[cid] = ci
        if not isinstance(sample["qa"], list):
            raise InputError(str(path), f"is a {type(sample['qa']).__name__}",
                             where=f"{where} ({cid})", field="qa", expected="a list of questions")
        conv, sessions = _conversation(path, cid, ci, sample["conversation"], report)
        convs.append(conv)
        report.sessions += sessions
        side[cid] = {k: sample.get(k, {})
                     for k in ("observation", "session_summary", "event_summary")}
        known = set(conv.event_index())
        seen_q: dict[str, int] = {}
        for qi, q in enumerate(sample["qa"]):
            item = _qa_item(path, cid, ci, qi, q, known, report)
            key = item.question.strip().lower()
            if key in seen_q:
                report.defects.append(Defect("duplicate_question", cid, f"qa[{qi}]",
                                             f"same question as qa[{seen_q[key]}]"))
            else:
                seen_q[key] = qi
            cats[item.category] += 1
            qa.append(item)
    report.conversations = len(convs)
    report.turns = sum(len(c.events) for c in convs)
    report.image_turns = sum(1 for c in convs for e in c.events if "blip_caption" in e.meta)
    report.qa_by_category = dict(sorted(cats.items()))
    return LocomoCorpus(conversations=convs, qa=qa, report=report, side=side, path=str(path))


def _conversation(path: Path, cid: str, ci: int, raw: Any, report: LocomoReport
                  ) -> tuple[Conversation, int]:
    if not isinstance(raw, dict):
        raise InputError(str(path), "not an object", where=f"sample [{ci}] ({cid})",
                         field="conversation", expected="the LoCoMo conversation object")
    speakers = [str(raw[k]) for k in ("speaker_a", "speaker_b") if k in raw]
    session_nums = sorted(int(m.group(1)) for k in raw if (m := _SESSION_KEY.match(k)))
    date_nums = sorted(int(m.group(1)) for k in raw if (m := _DATE_KEY.match(k)))
    for n in date_nums:
        if n not in session_nums:
            report.defects.append(Defect("session_date_without_session", cid, f"session_{n}",
                                         f"session_{n}_date_time is set but session_{n} is absent"))
    events: list[Event] = []
    dates: dict[int, str] = {}
    seen_turns: dict[str, str] = {}
    used = 0
    for n in session_nums:
        turns = raw[f"session_{n}"]
        if not isinstance(turns, list) or not turns:
            report.defects.append(Defect("empty_session", cid, f"session_{n}", "no turns: skipped"))
            continue
        date_text = raw.get(f"session_{n}_date_time")
        if not date_text:
            report.defects.append(Defect("session_without_date", cid, f"session_{n}", "skipped"))
            continue
        try:
            base = parse_session_date(str(date_text))
        except ValueError as exc:
            raise InputError(str(path), f"cannot parse date {date_text!r}", where=f"{cid}",
                             field=f"session_{n}_date_time",
                             expected="like '1:56 pm on 8 May, 2023'") from exc
        dates[n] = str(date_text)
        used += 1
        for ti, turn in enumerate(turns):
            where = f"{cid} session_{n}[{ti}]"
            if not isinstance(turn, dict):
                raise InputError(str(path), "not an object", where=where,
                                 expected="a turn with dia_id, speaker, text")
            for fld in ("dia_id", "speaker"):
                value = turn.get(fld)
                if not isinstance(value, (str, int)) or isinstance(value, bool) or \
                        not str(value).strip():
                    raise InputError(str(path), "missing or empty", where=where, field=fld,
                                     expected="a non-empty string")
            tid = str(turn["dia_id"])
            speaker = str(turn["speaker"])
            if tid in seen_turns:
                raise InputError(str(path), f"dia_id {tid!r} repeats {seen_turns[tid]}",
                                 where=where, field="dia_id",
                                 expected="turn ids unique within the conversation")
            seen_turns[tid] = f"session_{n}[{ti}]"
            meta: dict[str, Any] = {"date_text": str(date_text)}
            for k in ("blip_caption", "img_url", "query", "re-download"):
                if k in turn:
                    meta[k] = turn[k]
            try:
                events.append(Event(id=tid, conversation=cid, session=n,
                                    timestamp=turn_timestamp(base, ti), speaker=speaker,
                                    channel="chat", text=ingested_text(turn), meta=meta))
            except ValidationError as exc:
                raise pydantic_to_input_error(str(path), where, exc) from None
    if not events:
        raise InputError(str(path), "no session with turns", where=f"sample [{ci}] ({cid})",
                         field="conversation", expected="session_<n> lists of turns, each with "
                         "a session_<n>_date_time")
    try:
        conv = Conversation(id=cid, speakers=speakers, events=events,
                            meta={"source": "locomo10",
                                  "session_dates": {str(k): v for k, v in dates.items()}})
    except ValidationError as exc:
        raise pydantic_to_input_error(str(path), f"sample [{ci}] ({cid})", exc) from None
    return conv, used


def _qa_item(path: Path, cid: str, ci: int, qi: int, q: Any, known: set[str],
             report: LocomoReport) -> QAItem:
    where = f"qa[{qi}]"
    if not isinstance(q, dict) or "question" not in q or "category" not in q:
        raise InputError(str(path), "QA entry lacks question or category", where=f"{cid} {where}",
                         expected="question, answer, evidence, category")
    cat = q["category"]
    if not isinstance(cat, int) or isinstance(cat, bool) or cat not in CATEGORY_NAMES:
        raise InputError(str(path), f"unknown category {cat!r}", where=f"{cid} {where}",
                         field="category", expected="1-5")
    answer = q.get("answer")
    if answer is None:
        if cat != 5:
            report.defects.append(Defect("missing_answer", cid, where,
                                         f"category {cat} without answer"))
        else:
            report.defects.append(Defect("category5_without_answer", cid, where,
                                         "only adversarial_answer is present"))
    elif not isinstance(answer, str):
        report.defects.append(Defect("non_string_answer", cid, where,
                                     f"{type(answer).__name__} {answer!r} read as text"))
        answer = str(answer)
    evidence: list[str] = []
    raw_ev = q.get("evidence") or []
    if not isinstance(raw_ev, list):
        raise InputError(str(path), f"is a {type(raw_ev).__name__}", where=f"{cid} {where}",
                         field="evidence", expected="a list of turn ids")
    if not raw_ev:
        report.defects.append(Defect("empty_evidence", cid, where, "no evidence ids"))
    for raw in raw_ev:
        kept, notes = normalise_evidence(raw, known)
        for piece, what in notes:
            kind = "unknown_evidence" if "names no turn" in what else "malformed_evidence"
            report.defects.append(Defect(kind, cid, where, f"{piece!r} {what}"))
        evidence.extend(e for e in kept if e not in evidence)
    adv = q.get("adversarial_answer")
    try:
        return QAItem(id=f"{cid}:qa{qi}", conversation=cid, question=str(q["question"]),
                      answer=answer, category=int(cat), evidence=evidence,
                      adversarial_answer=None if adv is None else str(adv),
                      meta={"audit_id": f"locomo_{ci}_qa{qi}"})
    except ValidationError as exc:
        raise pydantic_to_input_error(str(path), f"{cid} {where}", exc) from None


def locomo_dataset(path: str | Path, errata: str | None = None) -> Dataset:
    """Plain LoCoMo as a Dataset (conversations + QA only, no TWIST items).

    `errata`: None, "locomo-audit" (the default audit file beside the LoCoMo data), or a path to an
    errors.json; the overlay corrects answers and evidence (datasets/errata.py) and the dataset's
    version and key_sha256 say which overlay was used. Dataset.meta holds the loader report and,
    with errata, the ErrataReport.
    """
    corpus = load_locomo(path)
    meta: dict[str, Any] = {"locomo_report": corpus.report.as_dict()}
    qa = corpus.qa
    version = "locomo10"
    key_sha = corpus.sha256
    if errata:
        qa, version, key_sha, meta["errata"] = overlay_errata(qa, errata, path, version, key_sha)
    return Dataset(name="locomo", version=version, key_sha256=key_sha,
                   conversations=corpus.conversations, qa=qa, meta=meta)


def dataset_notes(dataset: Dataset) -> list[str]:
    """Lines the CLI prints under a run: for LoCoMo-based datasets the sha256 check of
    locomo10.json, the defects handled, QA before/after re-validation and which errata overlay
    changed how many questions; for any dataset with QA, the corpus it comes from and how many
    questions are scored. Empty for datasets without QA that are not LoCoMo-based."""
    lines: list[str] = []
    rep = dataset.meta.get("locomo_report")
    if rep:
        if rep.get("matches_release"):
            lines.append(f"locomo10.json sha256 {rep['sha256'][:12]}… matches the LoCoMo release")
        else:
            lines.append(f"WARNING: locomo10.json sha256 {rep['sha256']} differs from the LoCoMo "
                         f"release ({LOCOMO_RELEASE_SHA256}); scores are not comparable")
        if rep.get("defect_counts"):
            lines.append("LoCoMo defects handled: " + ", ".join(
                f"{k} {v}" for k, v in rep["defect_counts"].items()))
    if dataset.qa:
        corpus = "built-in demo" if dataset.name == "demo" else qa_corpus(dataset.name)
        if "skipped" in dataset.meta:  # an audit corpus: questions without evidence are no items
            lines.append(f"QA ({corpus}): {len(dataset.qa)} questions scored, "
                         f"{dataset.meta['skipped']} without an evidence location left out "
                         f"(key {dataset.version})")
        else:
            excluded = sum(1 for q in dataset.qa if q.excluded)
            lines.append(f"QA ({corpus}): {len(dataset.qa)} questions, {excluded} re-validated "
                         f"out, {len(dataset.qa) - excluded} scored (key {dataset.version})")
    err = dataset.meta.get("errata")
    if err:
        lines.append(f"errata {err['version']}: {err['changed']} questions changed "
                     f"({err['answer_changed']} answers, "
                     f"{err['evidence_only_changed']} evidence only)")
    return lines
