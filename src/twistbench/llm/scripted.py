"""A scripted model: a deterministic, rule-based responder for the loopback server that reads
each prompt and answers in the form the prompt asks for. For tests and smoke runs of the LLM
roles without a model; its answers are rules, not judgement, and no score made with it says
anything about a system.

    python -m twistbench.llm.loopback --reply twistbench.llm.scripted:respond
    python -m twistbench.llm.loopback --reply twistbench.llm.scripted:respond_with_faults

It recognises a prompt by its system text (llm/prompts/) and applies one rule per prompt:
- answerer: the memory line sharing most content words with the question, citing its id;
  "Not mentioned in memory" when none shares a word;
- judge_locomo: CORRECT when every content word of the gold answer is in the answer;
- judge_track_c: which states' values the answer names, and past-tense cues, decide the label;
- draft_alignment: the excerpt closest to the draft contradicts it when they share three
  content words and differ in a number or in negation;
- session_tensions: a new turn and an earlier turn of the same speaker sharing three content
  words and differing in a number or in negation make a tension;
- extractor: a new turn of four content words or more is ADDed, or UPDATEs the stored memory
  it shares three words with (when a number differs); a question or a greeting is skipped;
- tiap_audit: supports / partial / does_not_support by the share of the gold answer's content
  words in the credited memory;
- locomo_restyle: the line with a few casual forms swapped in outside its protected spans and
  "Yeah, " in front (plain text); `respond_restyle_dropping_a_span` also drops the first
  protected span, for the refusal path.
Any other request gets an echo. `respond_with_faults` injects, by a hash of the request, a 429
with Retry-After or a 500 on the first sight of a request (the client's retry then succeeds),
and a reply that is not JSON or is cut off (finish_reason "length") on a few requests: those
are the items' errors, every time, from the cache too.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from twistbench.llm.loopback import Fault, Reply, Scripted, echo_reply, last_user_message
from twistbench.llm.prompts import available_prompts, load_prompt

_WORD = re.compile(r"[a-z0-9$%.:]+")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_LINE = re.compile(r"^\[([^\]]+)\]\s?(.*)$")
_NEGATIONS = frozenset({"not", "no", "never", "dont", "doesnt", "didnt", "isnt", "wont",
                        "cant", "cannot", "without", "longer", "stop", "stopped", "cancel",
                        "cancelled", "canceled", "instead"})
_STOP = frozenset("""a an the and or but if of to in on at by for with from as into about is are
was were be been am do does did have has had will would can could may might i you he she it we
they me him her us them my your his its our their this that these those what which who when
where why how there here so than then too very just also any some all each more most other
such only own same yes ok okay""".split())
_PAST = ("used to", "previously", "was ", "were ", "changed from", "no longer", "before",
         "originally", "at first", "earlier", "moved from", "switched from", "instead of")


def words(text: str) -> set[str]:
    out = set()
    for w in _WORD.findall(text.lower().replace("'", "")):
        w = w.strip(".:")
        if w and w not in _STOP:
            out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def _numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def _negated(text: str) -> bool:
    return bool(words(text) & _NEGATIONS) or "n't" in text.lower()


def _section(text: str, start: str, end: str | None = None) -> str:
    head = text.find(start)
    if head < 0:
        return ""
    body = text[head + len(start):]
    if end is not None and end in body:
        body = body[:body.index(end)]
    return body.strip()


def _lines(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def _field(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith(name):
            return line[len(name):].strip()
    return ""


_DATE = re.compile(r"^\d{1,2} [A-Z][a-z]+ \d{4} ")


def _undated(text: str) -> str:
    return _DATE.sub("", text)


def _speaker(text: str) -> str:
    body = _undated(text)
    return body.split(":", 1)[0] if ":" in body else ""


def _conflicts(a: str, b: str) -> bool:
    """Three shared content words and a difference in numbers or in negation."""
    if len(words(a) & words(b)) < 3:
        return False
    na, nb = _numbers(a), _numbers(b)
    return (na != nb and bool(na) and bool(nb)) or _negated(a) != _negated(b)


# -- one rule per prompt ----------------------------------------------------------------------

def _answerer(user: str) -> dict[str, Any]:
    memories = _lines(_section(user, "Memories:", "\nQuestion:"))
    asked = words(_field(user, "Question:"))
    best = max(memories, key=lambda m: len(asked & words(m[1])), default=None)
    if best is None or not asked & words(best[1]):
        return {"answer": "Not mentioned in memory", "evidence": []}
    return {"answer": _undated(best[1]), "evidence": [best[0]]}


def _judge_locomo(user: str) -> dict[str, Any]:
    gold = words(_field(user, "Gold answer:"))
    answer = words(_field(user, "Generated answer:"))
    ok = bool(gold) and gold <= answer
    return {"reasoning": "every gold word is in the answer" if ok
            else "the answer misses a gold word", "label": "CORRECT" if ok else "WRONG"}


_STATE = re.compile(r"^\d+\. (.*?)(?: \(also: (.*)\))? - (CURRENT|SUPERSEDED)$")


def _judge_track_c(user: str) -> dict[str, Any]:
    answer = _field(user, "Answer:").lower()
    named_current = named_old = 0
    currents = 0
    for line in _section(user, "States, oldest first:", "\nAnswer:").splitlines():
        m = _STATE.match(line.strip())
        if not m:
            continue
        forms = [m.group(1)] + [v.strip() for v in (m.group(2) or "").split(",") if v.strip()]
        named = any(re.search(rf"\b{re.escape(f.lower())}\b", answer) for f in forms)
        if m.group(3) == "CURRENT":
            currents += 1
            named_current += named
        else:
            named_old += named
    past = any(cue in f" {answer}" for cue in _PAST)
    if not named_current and not named_old:
        label = "other"
    elif named_old and not named_current:
        label = "stale"
    elif named_old:
        label = "current" if past else "hedged"
    else:
        label = "current" if named_current == currents else "partial"
    history = bool(named_old and named_current and past)
    return {"reasoning": "rule: values named and past-tense cues", "label": label,
            "names_history": history}


def _draft_alignment(user: str) -> dict[str, Any]:
    draft = _section(user, "Draft:")
    excerpts = _lines(_section(user, "Record excerpts:", "\nDraft:"))
    hits = [i for i, text in excerpts if _conflicts(draft, _undated(text))]
    if not hits:
        return {"aligned": True, "conflicts": []}
    return {"aligned": False, "conflicts": [{"evidence": hits[:2],
                                             "rationale": "a number or a negation differs"}]}


def _session_tensions(user: str) -> dict[str, Any]:
    earlier = _lines(_section(user, "Earlier turns:", "\nNew session:"))
    new = _lines(_section(user, "New session:"))
    out = []
    claimed: set[str] = set()
    for nid, ntext in new:
        for eid, etext in earlier:
            if eid in claimed or _speaker(etext) != _speaker(ntext) or not _speaker(ntext):
                continue
            if _conflicts(_undated(ntext), _undated(etext)):
                claimed.add(eid)
                out.append({"claim_evidence": [eid], "new_evidence": [nid],
                            "rationale": "same speaker; a number or a negation differs"})
                break
    return {"tensions": out}


def _extractor(user: str) -> dict[str, Any]:
    stored = _lines(_section(user, "Stored memories:", "\nNew turns:"))
    ops = []
    for tid, text in _lines(_section(user, "New turns:")):
        body = _undated(text)
        speaker, _, said = body.partition(":")
        said = said.strip() or body
        if said.endswith("?") or len(words(said)) < 4:
            continue
        fact = f"{speaker.strip()} said: {said}" if speaker else said
        match = next((mid for mid, mtext in stored if len(words(mtext) & words(said)) >= 3
                      and _numbers(mtext) != _numbers(said)), None)
        if match is not None and _negated(said) and not _numbers(said):
            ops.append({"op": "DELETE", "id": match, "source_turns": [tid]})
        elif match is not None:
            ops.append({"op": "UPDATE", "id": match, "text": fact, "source_turns": [tid]})
        else:
            ops.append({"op": "ADD", "text": fact, "source_turns": [tid]})
    return {"operations": ops}


def _tiap_audit(user: str) -> dict[str, Any]:
    gold = words(_field(user, "Gold answer:"))
    memory = words(_section(user, "Credited memory:"))
    share = len(gold & memory) / len(gold) if gold else 0.0
    label = "supports" if share == 1 else "partial" if share >= 0.5 else "does_not_support"
    return {"reasoning": f"{share:.0%} of the gold words are in the memory", "label": label}


_RESTYLE_SWAPS = ((r"\bI am\b", "I'm"), (r"\bdo not\b", "don't"), (r"\bIt is\b", "It's"),
                  (r"\bit is\b", "it's"), (r"\bvery\b", "super"), (r"\breally\b", "so"),
                  (r"\bgoing to\b", "gonna"))


def _restyle_parts(user: str) -> tuple[list[str], str]:
    """(protected spans, the line) of a locomo_restyle request."""
    spans = [line[2:] for line in _section(user, "Keep these exactly as written:",
                                           "\nThe line, by ").splitlines()
             if line.startswith("- ")]
    head = user.rfind("\nThe line, by ")
    line = user[head:].split(":\n", 1)[1].strip() if head >= 0 else ""
    return spans, line


def restyle_text(line: str, protected: list[str]) -> str:
    """The scripted restyle of one line: a few casual forms swapped in outside the protected
    spans and a reaction in front ("Yeah, ..."), every protected span left as it is."""
    if protected:
        cut = re.compile("(" + "|".join(re.escape(p) for p in protected) + ")")
        pieces = cut.split(line)
    else:
        pieces = [line]
    out = []
    for k, piece in enumerate(pieces):
        if k % 2 == 0:  # outside every protected span
            for pattern, repl in _RESTYLE_SWAPS:
                piece = re.sub(pattern, repl, piece)
        out.append(piece)
    text = "".join(out)
    return ("Oh, " if text.startswith("Yeah") else "Yeah, ") + text


def _locomo_restyle(user: str) -> str:
    spans, line = _restyle_parts(user)
    return restyle_text(line, spans)


def respond_restyle_dropping_a_span(body: dict[str, Any]) -> Scripted:
    """`respond`, except that a locomo_restyle rewrite loses its first protected span (the
    pass must refuse it and keep the authored turn)."""
    if _prompt_of(body) != "locomo_restyle":
        return respond(body)
    spans, line = _restyle_parts(last_user_message(body))
    if spans:
        line = " ".join(line.replace(spans[0], "", 1).split())
    return Reply(restyle_text(line, spans[1:]))


# Prompts whose reply is plain text, not JSON.
TEXT_RULES: dict[str, Callable[[str], str]] = {"locomo_restyle": _locomo_restyle}

RULES: dict[str, Callable[[str], dict[str, Any]]] = {
    "answerer": _answerer, "judge_locomo": _judge_locomo, "judge_track_c": _judge_track_c,
    "draft_alignment": _draft_alignment, "session_tensions": _session_tensions,
    "extractor": _extractor, "tiap_audit": _tiap_audit,
}
_BY_SYSTEM: dict[str, str] = {}


def _prompt_of(body: dict[str, Any]) -> str | None:
    if not _BY_SYSTEM:
        for name in available_prompts():
            _BY_SYSTEM[load_prompt(name).system] = name
    for message in body.get("messages") or []:
        if message.get("role") == "system":
            return _BY_SYSTEM.get(message.get("content"))
    return None


def respond(body: dict[str, Any]) -> Scripted:
    """The scripted reply to one chat-completions request body."""
    name = _prompt_of(body)
    if name in TEXT_RULES:
        return Reply(TEXT_RULES[name](last_user_message(body)))
    if name is None or name not in RULES:
        return echo_reply(body)
    return Reply(json.dumps(RULES[name](last_user_message(body)), ensure_ascii=False))


# -- faults -----------------------------------------------------------------------------------

_SEEN: set[str] = set()
_SEEN_LOCK = threading.Lock()


def _hash(body: dict[str, Any]) -> int:
    text = json.dumps(body.get("messages"), sort_keys=True)
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def respond_with_faults(body: dict[str, Any]) -> Scripted:
    """`respond`, with faults chosen by the request's hash (out of 100): 0-2 a 429 with
    Retry-After 1 and 3-5 a 500, each on the first sight of the request only; 6 a reply that
    is not JSON; 7 a reply cut off at the token limit."""
    bucket = _hash(body) % 100
    key = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
    with _SEEN_LOCK:
        first = key not in _SEEN
        _SEEN.add(key)
    if first and bucket < 3:
        return Fault.status_code(429, retry_after="1", message="scripted rate limit")
    if first and bucket < 6:
        return Fault.status_code(500, message="scripted server error")
    if bucket == 6 and _prompt_of(body) in RULES:
        return Reply("I think the answer is probably fine.")
    if bucket == 7 and _prompt_of(body) in RULES:
        reply = respond(body)
        text = reply.content if isinstance(reply, Reply) else "{}"
        return Reply(text[: max(1, len(text) // 2)], finish_reason="length")
    return respond(body)
