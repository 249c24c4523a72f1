"""The restyle pass of TWIST-LoCoMo 2.0 (issue 12): every injected turn rewritten by a language
model in its speaker's voice, with every fact the gold relies on protected.

Why: our turns are told from LoCoMo's by authorship (word and character n-grams find them at AUC
~0.93; hand rewriting moved that ~0.01 a round). The whitepaper (§4.1) says injection is
"LLM-drafted ... to match each persona's voice"; this pass does that once, through an
OpenAI-compatible endpoint, and its output is committed as data (banks/locomo/restyle/<conv>.toml),
so every later build (and CI) reproduces the key from the files with no endpoint.

Units: every turn of a conversation's authoring files (`<conv>.toml` inserts and
`<conv>.crisis.toml`) except bank lines: an arc target or a distractor is a line of contrast.toml
filled with the conversation's values, and the checker requires it to equal that line exactly
(the same line closes a reversal in one conversation and a hard negative in another: a contrast
set). Restyling it per conversation would break the set, so bank lines are left as written.

Protected spans (what the checker or the gold reads from the text, locomo_authoring.py): chain
state values and variants, PII values, parts, phone forms and spelled digits, the forms a control
or an emotional turn must hold, crisis key phrases, the slot values of arcs and drafts a turn is
evidence for, the insert's keywords (QA re-validation reads them), the speakers' names in item
turns, month-day dates, digits and `{placeholders}`. A rewrite is accepted only if it keeps every
one verbatim, is one line of 0.5-2.0 times the length, at most MAX_WORDS words, and asks a
question exactly when the authored turn does (paraphrase.refusal, shared with the TWIST-CS
paraphraser). Then the whole conversation is checked again with the rewrites in place
(check_conversation); a rewrite a rule names is reverted, and a conversation that still breaks a
rule stops the pass. A failed call stops the pass (InputError) with nothing written.

The files: `[provenance]` (model, endpoint host, prompt sha256, date, counts) and one `[[turn]]`
per accepted rewrite (ref, sha256 of the authored text it replaces, new text), plus one `[[kept]]`
per refused rewrite (ref, authored sha256, why). The build (locomo2.build_locomo2) applies a
`[[turn]]` only when the authored text still hashes to its authored_sha256: an authoring edit
invalidates its restyle, and the build reports the stale entries.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from twistbench.datasets.keyfile import atomic_write_bytes
from twistbench.datasets.locomo import LocomoCorpus
from twistbench.errors import InputError
from twistbench.itemgen.locomo_authoring import (
    MAX_WORDS,
    REF,
    SLOT,
    Placed,
    Turn,
    authoring_path,
    check_conversation,
    month_day_mentions,
    partner_names,
    strip_image,
)
from twistbench.itemgen.locomo_plan import bank_path, load_contrast, load_plan, read_toml
from twistbench.itemgen.paraphrase import refusal, rewrite_client
from twistbench.judges.structural import phone_forms
from twistbench.llm import LLMError, load_prompt
from twistbench.llm.prompts import format_lines

PROMPT = "locomo_restyle"
EXAMPLE_TURNS = 16  # the speaker's own LoCoMo turns shown for their voice
DEFAULT_CACHE_DIR = Path(".twistbench-cache/restyle")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
_DIGITS = re.compile(r"\d+(?:[.,:/-]\d+)*")
_DIGIT_WORDS = ("zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight",
                "nine")
_SPELLED_RUN = re.compile(r"\b(?:" + "|".join(_DIGIT_WORDS) + r")(?:[\s,-]+(?:"
                          + "|".join(_DIGIT_WORDS) + r"))+\b", re.IGNORECASE)
PROVENANCE_FIELDS = {"conversation": str, "model": str, "endpoint_host": str,
                     "prompt_sha256": str, "date": str, "accepted": int, "kept": int}


def restyle_dir() -> Path:
    """The committed folder of restyle files (banks/locomo/restyle)."""
    return bank_path("restyle")


def restyle_path(conv_id: str, folder: Path | None = None) -> Path:
    return (folder if folder is not None else restyle_dir()) / f"{conv_id}.toml"


def text_sha256(text: str) -> str:
    """The sha256 an entry binds to: of the authored turn text as the checker reads it
    (stripped, without the image caption, which is a separate field)."""
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def insert_turns(doc: dict[str, Any] | None) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """(ref, turn table, its insert) of every turn of an authoring document's inserts, refs as
    the checker numbers them ('<insert id>.<n>', from 1); none for a missing document."""
    for ins in (doc or {}).get("insert", []):
        for j, turn in enumerate(ins.get("turns", []) or [], 1):
            yield f"{ins.get('id')}.{j}", turn, ins


# ---------------------------------------------------------------------------------------------
# Units and their protected spans


@dataclass(frozen=True)
class Unit:
    """One authored turn the pass may rewrite."""

    conversation: str
    ref: str
    speaker: str
    text: str  # the authored text (no image caption)
    protected: tuple[str, ...]
    examples: tuple[tuple[str, str], ...]  # (LoCoMo id, text) of the speaker's own turns
    before: str
    after: str


def bank_line_refs(placed: Placed) -> set[str]:
    """Turns whose text is a contrast.toml line (arc targets, distractors): not restyled."""
    return _bank_line_refs(placed.raw)


def _bank_line_refs(raw: dict[str, Any]) -> set[str]:
    refs = {arc.get("target") for table in ("reversal", "hard_negative")
            for arc in raw.get(table, [])}
    refs |= {d.get("turn") for d in raw.get("distractor", [])}
    return {r for r in refs if isinstance(r, str)}


def _found(text: str, form: str) -> list[str]:
    """The occurrences of `form` in `text` as written there (case-insensitive, word-bounded),
    so the span protected is the turn's own spelling."""
    if not form.strip():
        return []
    pattern = r"(?<![\w])" + re.escape(form.strip()) + r"(?![\w])"
    return [m.group(0) for m in re.finditer(pattern, text, re.IGNORECASE)]


def _keyword_spans(text: str, keyword: str) -> list[str]:
    """A keyword as the turn writes it, plural or inflected ('treadmill' -> 'treadmills')."""
    pattern = r"(?<![\w])" + re.escape(keyword.strip()) + r"\w*"
    return [m.group(0) for m in re.finditer(pattern, text, re.IGNORECASE)]


def protected_spans(placed: Placed) -> dict[str, list[str]]:
    """ref -> the strings of that injected turn the checker or the gold reads (module
    docstring), each as the turn writes it."""
    spans: dict[str, list[str]] = {}
    text = {t.ref: strip_image(t.text) for t in placed.turns() if t.injected}

    def add(ref: Any, forms: Any) -> None:
        if ref not in text:
            return  # an original LoCoMo turn: never rewritten
        for form in forms:
            for span in _found(text[ref], str(form)):
                spans.setdefault(ref, []).append(span)

    docs = [placed.raw] + ([placed.crisis_raw] if placed.crisis_raw else [])
    for doc in docs:
        for ref, _, ins in insert_turns(doc):
            for kw in ins.get("keywords", []):
                if ref in text:
                    spans.setdefault(ref, []).extend(_keyword_spans(text[ref], str(kw)))
        for c in doc.get("chain", []):
            forms = [f for st in c.get("states", []) for f in
                     [st.get("value", ""), *st.get("variants", [])]]
            for st in c.get("states", []):
                for ref in st.get("turns", []):
                    add(ref, forms)
            for ref in c.get("later_mentions", []):
                add(ref, forms)
        for x in doc.get("pii", []):
            value = str(x.get("value", ""))
            # the value, its parts (a split plant: '27' and 'Wrenfield Avenue'), its words
            number_rest = re.match(r"^\s*(\d+)\s+(.+)$", value)
            forms = [value, *x.get("parts", []), *(number_rest.groups() if number_rest else ()),
                     *value.split()]
            if x.get("kind") == "phone":
                forms += phone_forms(value)
            for ref in x.get("turns", []):
                add(ref, forms)
                if x.get("form") == "spelled" and ref in text:
                    spans.setdefault(ref, []).extend(
                        m.group(0) for m in _SPELLED_RUN.finditer(text[ref]))
        for table in ("control", "emotional"):
            for x in doc.get(table, []):
                add(x.get("turn"), x.get("expected", []))
        for x in doc.get("crisis", []):
            add(x.get("turn"), x.get("key_phrases", []))
        for table in ("reversal", "hard_negative"):
            for arc in doc.get(table, []):
                values = [str(v) for v in arc.get("values", {}).values()]
                for ref in [*arc.get("anchor", []), *arc.get("drift", []), *arc.get("ack", [])]:
                    add(ref, values)
        for d in doc.get("draft", []):
            for ref in d.get("evidence", []):
                add(ref, [str(v) for v in d.get("values", {}).values()])
    names = {n for group in partner_names(placed.conversation).values() for n in group}
    for ref in placed.roles:
        add(ref, sorted(names))
    for ref, t in text.items():
        found = [*month_day_mentions(t), *_DIGITS.findall(t),
                 *(m.group(0) for m in SLOT.finditer(t))]
        if found:
            spans.setdefault(ref, []).extend(found)
    # Longest first, each once; a span inside a longer protected span adds nothing.
    out: dict[str, list[str]] = {}
    for ref, found in spans.items():
        kept: list[str] = []
        for s in sorted(set(found), key=lambda s: (-len(s), s)):
            if not any(s in k for k in kept):
                kept.append(s)
        out[ref] = kept
    return out


def _examples(placed: Placed, turn: Turn) -> tuple[tuple[str, str], ...]:
    """EXAMPLE_TURNS of the speaker's original LoCoMo turns: those of the turn's session, then
    of the nearest sessions (earlier first on a tie), shown in conversation order."""
    chosen: list[Turn] = []
    for s in sorted(placed.sessions, key=lambda s: (abs(s - turn.session), s)):
        own = [t for t in placed.sessions[s] if not t.injected and t.speaker == turn.speaker]
        chosen += own[:EXAMPLE_TURNS - len(chosen)]
        if len(chosen) >= EXAMPLE_TURNS:
            break
    chosen.sort(key=lambda t: (t.session, t.index))
    return tuple((t.ref, strip_image(t.text)) for t in chosen)


def _neighbour(placed: Placed, turn: Turn, step: int, crisis: bool) -> str:
    lst = [t for t in placed.sessions[turn.session] if crisis or not t.crisis]
    k = [t.ref for t in lst].index(turn.ref) + step
    if not 0 <= k < len(lst):
        return "(none: the session " + ("starts" if step < 0 else "ends") + " here)"
    other = lst[k]
    return f"{other.speaker}: {' '.join(strip_image(other.text).split())}"


def units_of(placed: Placed) -> list[Unit]:
    """Every injected turn of the conversation but its bank lines, in conversation order."""
    skip = bank_line_refs(placed)
    spans = protected_spans(placed)
    out = []
    for t in placed.turns():
        if not t.injected or t.ref in skip:
            continue
        out.append(Unit(conversation=placed.conversation.id, ref=t.ref, speaker=t.speaker,
                        text=strip_image(t.text), protected=tuple(spans.get(t.ref, [])),
                        examples=_examples(placed, t),
                        before=_neighbour(placed, t, -1, t.crisis),
                        after=_neighbour(placed, t, 1, t.crisis)))
    return out


def messages(unit: Unit) -> list[dict[str, str]]:
    """The chat request of one unit (prompt llm/prompts/locomo_restyle.txt)."""
    protected = "\n".join(f"- {p}" for p in unit.protected) or "(nothing)"
    return load_prompt(PROMPT).render(
        speaker=unit.speaker, examples=format_lines(unit.examples), before=unit.before,
        after=unit.after, protected=protected, text=unit.text)


# ---------------------------------------------------------------------------------------------
# The pass


@dataclass(frozen=True)
class RestyleConfig:
    """The endpoint the pass calls (OpenAI-compatible; base_url e.g. http://host:8000/v1)."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    cache_dir: Path = DEFAULT_CACHE_DIR
    temperature: float = 0.0
    timeout_s: float = 120.0
    max_attempts: int = 6


@dataclass
class ConversationRestyle:
    """What the pass decided for one conversation."""

    conversation: str
    accepted: dict[str, tuple[str, str]] = field(default_factory=dict)  # ref -> (sha, text)
    kept: dict[str, tuple[str, str]] = field(default_factory=dict)  # ref -> (sha, reason)
    bank_lines: int = 0


@dataclass
class RestyleReport:
    """What `twist build locomo --restyle` prints before the build."""

    model: str
    endpoint_host: str
    prompt_sha256: str
    conversations: list[ConversationRestyle]
    calls: int = 0
    files: list[Path] = field(default_factory=list)

    def render(self) -> str:
        acc = sum(len(c.accepted) for c in self.conversations)
        kept = sum(len(c.kept) for c in self.conversations)
        lines = [f"restyle pass ({self.model} at {self.endpoint_host}, prompt "
                 f"{self.prompt_sha256[:12]}): {acc} turn(s) rewritten, {kept} kept as written, "
                 f"{sum(c.bank_lines for c in self.conversations)} bank line(s) left; "
                 f"{self.calls} call(s)"]
        for c in self.conversations:
            lines.append(f"  {c.conversation}: {len(c.accepted)} rewritten, {len(c.kept)} kept")
            lines += [f"    kept {ref}: {reason}" for ref, (_, reason) in sorted(c.kept.items())]
        lines += [f"  wrote {p}" for p in self.files]
        return "\n".join(lines)


class Restyler:
    """Rewrites units through the endpoint, with the response cache (a rerun with the same
    model and prompt makes no call). A failed call is an InputError: the pass stops."""

    def __init__(self, cfg: RestyleConfig):
        self.cfg = cfg
        self._client = rewrite_client(cfg, "--restyle")
        self.calls = 0

    def rewrite(self, unit: Unit) -> tuple[str, str | None]:
        """(the model's text, why it is refused or None)."""
        try:
            reply = self._client.complete(messages(unit))
        except LLMError as exc:
            raise InputError("--restyle", f"endpoint {self._client.config.endpoint} failed on "
                             f"{unit.conversation} {unit.ref}: {exc.message}",
                             expected="an OpenAI-compatible /chat/completions endpoint") from None
        self.calls += not reply.cached
        out = (reply.text or "").strip()
        return out, refusal(unit.text, out, unit.protected, max_words=MAX_WORDS,
                            keep_question=True)

    def close(self) -> None:
        self._client.close()


Progress = Callable[[str, int], Callable[[], None]]


def restyle_conversation(corpus: LocomoCorpus, conv_id: str, restyler: Restyler,
                         progress: Progress | None = None) -> ConversationRestyle:
    """Rewrite every unit of one conversation, then check the conversation with the rewrites in
    place; a rewrite a broken rule names is reverted (kept as written, with the rule).
    `progress(conv, n_units)` returns the callback called after each unit (the CLI's bar)."""
    plan, contrast = load_plan(), load_contrast()
    raw = read_toml(authoring_path(conv_id))
    cpath = authoring_path(conv_id, crisis=True)
    craw = read_toml(cpath) if cpath.exists() else None
    placed = check_conversation(corpus, conv_id, plan, contrast, raw, craw)
    if placed.problems:
        raise InputError(str(authoring_path(conv_id)), f"{len(placed.problems)} rule(s) broken "
                         f"before the restyle: {'; '.join(placed.problems[:5])}",
                         expected="an authoring file that passes `python -m "
                         "twistbench.itemgen.locomo_read <conv> --check`")
    result = ConversationRestyle(conversation=conv_id,
                                 bank_lines=len(bank_line_refs(placed)))
    units = units_of(placed)
    tick = progress(conv_id, len(units)) if progress is not None else None
    for unit in units:
        text, why = restyler.rewrite(unit)
        sha = text_sha256(unit.text)
        if why is None and text == unit.text:
            why = "the model returned the text unchanged"
        if why is None:
            result.accepted[unit.ref] = (sha, text)
        else:
            result.kept[unit.ref] = (sha, why)
        if tick is not None:
            tick()
    _recheck(corpus, conv_id, plan, contrast, raw, craw, placed, result)
    return result


def _recheck(corpus: LocomoCorpus, conv_id: str, plan: dict[str, Any], contrast: dict[str, Any],
             raw: dict[str, Any], craw: dict[str, Any] | None, placed: Placed,
             result: ConversationRestyle) -> None:
    """Every rule of the guide, with the accepted rewrites in place. A problem that names a
    rewritten turn reverts it; a problem that names none reverts the rewritten item turns (the
    roles); what still breaks a rule stops the pass."""
    item_refs = set(placed.roles)
    for round_ in range(3):
        new_raw, new_craw, _ = apply_entries(raw, craw, result.accepted)
        problems = check_conversation(corpus, conv_id, plan, contrast, new_raw,
                                      new_craw).problems
        if not problems:
            return
        if round_ == 2:
            break
        revert: dict[str, str] = {}
        for problem in problems:
            named = [r for r in result.accepted if re.search(
                r"(?<![\w.-])" + re.escape(r) + r"(?![\w])", problem)]
            if not named and round_ == 1:
                named = [r for r in result.accepted if r in item_refs]
            for r in named:
                revert.setdefault(r, problem)
        for r, problem in revert.items():
            sha, _ = result.accepted.pop(r)
            result.kept[r] = (sha, f"breaks a rule in place: {problem}")
    raise InputError(str(authoring_path(conv_id)), "the restyled conversation breaks "
                     f"{len(problems)} rule(s) no single rewrite explains: "
                     f"{'; '.join(problems[:5])}", expected="a rerun with another model, or the "
                     "rule's turn kept as written")


def run_restyle(corpus: LocomoCorpus, conversations: list[str], cfg: RestyleConfig,
                folder: Path | None = None, progress: Progress | None = None) -> RestyleReport:
    """The pass over `conversations`: rewrite, check, then write one file per conversation
    (each atomically, all only after every conversation passed; default folder
    banks/locomo/restyle)."""
    prompt_sha = load_prompt(PROMPT).sha256
    host = urlsplit(cfg.base_url).hostname or cfg.base_url
    restyler = Restyler(cfg)
    results = []
    try:
        for cid in conversations:
            results.append(restyle_conversation(corpus, cid, restyler, progress))
    finally:
        restyler.close()
    report = RestyleReport(model=cfg.model, endpoint_host=host, prompt_sha256=prompt_sha,
                           conversations=results, calls=restyler.calls)
    day = datetime.now(UTC).date().isoformat()
    docs = [(restyle_path(r.conversation, folder), _encode(r, cfg.model, host, prompt_sha, day))
            for r in results]
    for path, data in docs:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data)
        report.files.append(path)
    return report


# ---------------------------------------------------------------------------------------------
# The files


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's; DEL is the one TOML also escapes)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _encode(r: ConversationRestyle, model: str, host: str, prompt_sha: str, day: str) -> bytes:
    lines = [f"# TWIST-LoCoMo 2.0 restyle of {r.conversation} (itemgen/locomo_restyle.py; "
             "docs/keys/locomo-authoring.md, Restyle pass).",
             "# Every line is read before it is committed. Bank lines (arc targets, distractors) "
             "are not restyled.", "", "[provenance]"]
    prov = {"conversation": r.conversation, "model": model, "endpoint_host": host,
            "prompt_sha256": prompt_sha, "date": day}
    lines += [f"{k} = {_toml_string(v)}" for k, v in prov.items()]
    lines += [f"accepted = {len(r.accepted)}", f"kept = {len(r.kept)}",
              f"bank_lines = {r.bank_lines}"]
    for ref, (sha, text) in r.accepted.items():
        lines += ["", "[[turn]]", f"ref = {_toml_string(ref)}", f"authored_sha256 = \"{sha}\"",
                  f"text = {_toml_string(text)}"]
    for ref, (sha, reason) in r.kept.items():
        lines += ["", "[[kept]]", f"ref = {_toml_string(ref)}", f"authored_sha256 = \"{sha}\"",
                  f"reason = {_toml_string(reason)}"]
    return ("\n".join(lines) + "\n").encode("utf-8")


@dataclass
class RestyleFile:
    """One restyle file as read back."""

    path: Path
    provenance: dict[str, Any]
    entries: dict[str, tuple[str, str]]  # ref -> (authored sha256, new text)


def read_restyle(path: Path) -> RestyleFile:
    """Read and check one restyle file; any defect is an InputError naming file, entry, field."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"not valid TOML: {exc}") from None
    unknown = set(doc) - {"provenance", "turn", "kept"}
    if unknown:
        raise InputError(str(path), f"unknown table(s) {sorted(unknown)}",
                         expected="[provenance], [[turn]] and [[kept]]")
    prov = doc.get("provenance")
    if not isinstance(prov, dict):
        raise InputError(str(path), "no [provenance] table", where="provenance",
                         expected="model, endpoint_host, prompt_sha256, date, counts")
    for key, typ in PROVENANCE_FIELDS.items():
        if not isinstance(prov.get(key), typ) or isinstance(prov.get(key), bool):
            raise InputError(str(path), f"missing or not a {typ.__name__}", where="provenance",
                             field=key, expected=f"a {typ.__name__}")
    if prov["conversation"] != path.stem:
        raise InputError(str(path), f"names {prov['conversation']!r}", where="provenance",
                         field="conversation", expected=f"{path.stem!r} (the file's name)")
    entries: dict[str, tuple[str, str]] = {}
    for table in ("turn", "kept"):
        rows = doc.get(table, [])
        if not isinstance(rows, list):
            raise InputError(str(path), "not an array of tables", where=table,
                             expected=f"[[{table}]] entries")
        for n, row in enumerate(rows):
            where = f"{table}[{n}]"
            fields = ("ref", "authored_sha256", "text" if table == "turn" else "reason")
            if not isinstance(row, dict) or set(row) != set(fields):
                got = sorted(row) if isinstance(row, dict) else type(row).__name__
                raise InputError(str(path), f"fields {got}", where=where,
                                 expected=f"exactly {', '.join(fields)}")
            for key in fields:
                if not isinstance(row[key], str) or not row[key].strip():
                    raise InputError(str(path), "missing or empty", where=where, field=key,
                                     expected="a non-empty string")
            if not REF.match(row["ref"]):
                raise InputError(str(path), f"{row['ref']!r} is not an insert turn reference",
                                 where=where, field="ref", expected="'<insert id>.<n>'")
            if not SHA256.match(row["authored_sha256"]):
                raise InputError(str(path), "not a sha256", where=where,
                                 field="authored_sha256", expected="64 lowercase hex digits")
            if table == "turn":
                if "\n" in row["text"] or row["text"] != row["text"].strip():
                    raise InputError(str(path), "not one trimmed line", where=where,
                                     field="text", expected="the turn's text on one line")
                if row["ref"] in entries:
                    raise InputError(str(path), f"{row['ref']} restyled twice", where=where,
                                     field="ref", expected="one entry per turn")
                entries[row["ref"]] = (row["authored_sha256"], row["text"])
    if prov["kept"] != len(doc.get("kept", [])):
        raise InputError(str(path), f"says {prov['kept']}, the file has "
                         f"{len(doc.get('kept', []))} [[kept]] entries", where="provenance",
                         field="kept", expected="the number of [[kept]] entries")
    if prov["accepted"] != len(entries):
        raise InputError(str(path), f"says {prov['accepted']}, the file has {len(entries)} "
                         "[[turn]] entries", where="provenance", field="accepted",
                         expected="the number of [[turn]] entries")
    return RestyleFile(path=path, provenance=dict(prov), entries=entries)


def apply_entries(raw: dict[str, Any], craw: dict[str, Any] | None,
                  entries: dict[str, tuple[str, str]]
                  ) -> tuple[dict[str, Any], dict[str, Any] | None, list[str]]:
    """The authoring documents with every entry whose authored sha256 matches applied (copies;
    the inputs are not changed), and the refs of the stale entries: a ref that names no turn,
    or whose authored text changed since the restyle."""
    applied: set[str] = set()
    docs = []
    for doc in (raw, craw):
        if doc is None:
            docs.append(None)
            continue
        doc = copy.deepcopy(doc)
        for ref, turn, _ in insert_turns(doc):
            if ref in entries and isinstance(turn, dict) and isinstance(turn.get("text"), str):
                sha, text = entries[ref]
                if text_sha256(turn["text"]) == sha:
                    turn["text"] = text
                    applied.add(ref)
        docs.append(doc)
    stale = sorted(r for r in entries if r not in applied)
    return docs[0], docs[1], stale


@dataclass
class RestyleUse:
    """How a build used one conversation's restyle file."""

    file: RestyleFile
    applied: int
    stale: list[str]


def restyled_documents(conv_id: str, raw: dict[str, Any], craw: dict[str, Any] | None,
                       folder: Path | None = None
                       ) -> tuple[dict[str, Any], dict[str, Any] | None, RestyleUse | None]:
    """What the build reads for one conversation: the authoring documents with its restyle
    file applied, or as they are (and None) when the conversation has no restyle file."""
    path = restyle_path(conv_id, folder)
    if not path.exists():
        return raw, craw, None
    rf = read_restyle(path)
    bank = sorted(_bank_line_refs(raw) & set(rf.entries))
    if bank:
        n = list(rf.entries).index(bank[0])
        raise InputError(str(path), f"{bank[0]} is a bank line (an arc target or a "
                         "distractor: a contrast.toml line, the same in every conversation)",
                         where=f"turn[{n}]", field="ref",
                         expected="no entry for a bank line (they are not restyled)")
    # The default key leaves the crisis file out; its entries are still checked (not stale).
    cpath = authoring_path(conv_id, crisis=True)
    crisis_doc = craw if craw is not None else read_toml(cpath) if cpath.exists() else None
    new_raw, new_craw, stale = apply_entries(raw, crisis_doc, rf.entries)
    applied = len(rf.entries) - len(stale)
    if craw is None and crisis_doc is not None:
        applied -= len(_crisis_refs(crisis_doc) & (set(rf.entries) - set(stale)))
        new_craw = None
    return new_raw, new_craw, RestyleUse(file=rf, applied=applied, stale=stale)


def _crisis_refs(doc: dict[str, Any]) -> set[str]:
    return {ref for ref, _, _ in insert_turns(doc)}
