"""Values a turn states (numbers, dates with their slot words), whether they changed, and what a
turn says it replaces ("instead of X", "from X to Y")."""

from __future__ import annotations

import re

from twistbench.systems.heuristic.lexicon import _DATE, _NUMBER
from twistbench.systems.heuristic.stance import stems

_UNIT_SKIP = {"a", "an", "the", "of", "to", "is", "are", "was", "at", "on", "in", "for", "and",
              "with", "by", "it", "its", "our", "we", "per", "from", "about", "around", "now"}


def value_mentions(text: str) -> list[tuple[str, str, str]]:
    """(slot, normalised value, surface) for each number or date in a text.

    The slot says what the value measures, so that "120 seats" and "ticket 4411" are never
    compared: dates share the slot "date"; a number's slot is the word after it ("120 seats"),
    or else the word before it ("ticket 4411")."""
    out: list[tuple[str, str, str]] = []
    for m in _DATE.finditer(text):
        parts = re.findall(r"[a-z]+|\d+", m.group(0).lower())
        day = next((p for p in parts if p.isdigit()), "")
        mon = next((p[:3] for p in parts if not p.isdigit() and p not in {"st", "nd", "rd", "th",
                                                                         "of"}), "")
        out.append(("date", f"{mon}-{day}", m.group(0)))
    stripped = _DATE.sub(lambda m: " " * len(m.group(0)), text)
    for m in _NUMBER.finditer(stripped):
        v = re.sub(r"[,\s]", "", m.group(0).lower()).replace("percent", "%")
        if re.fullmatch(r"(19|20)\d\d", v):
            out.append(("year", v, m.group(0)))
            continue
        nxt = re.match(r"\s*([a-z][a-z-]*)", stripped[m.end():].lower())
        prev = [w for w in re.findall(r"[a-z][a-z-]*", stripped[max(0, m.start() - 40):m.start()]
                                      .lower()) if w not in _UNIT_SKIP][-1:]
        if v[:1] in "$€£":
            unit = "money"
        elif nxt and nxt.group(1) not in _UNIT_SKIP:
            unit = nxt.group(1)
        else:
            unit = prev[0] if prev else "number"
        unit = unit[:-1] if unit.endswith("s") and len(unit) > 3 else unit
        out.append((unit, v, m.group(0)))
    return out


def values(text: str) -> set[str]:
    """Slot-qualified values of a text: {"seat=120", "date=mar-3"}."""
    return {f"{slot}={v}" for slot, v, _ in value_mentions(text)}


def _slots(vals: set[str]) -> set[str]:
    return {v.split("=", 1)[0] for v in vals}


def changed_values(old: set[str], new: set[str]) -> bool:
    """The two texts give a different value for a slot they share."""
    shared = _slots(old) & _slots(new)
    def of(vals: set[str], sl: str) -> set[str]:
        return {v for v in vals if v.startswith(sl + "=")}

    return any(of(old, sl) != of(new, sl) for sl in shared)


_REPLACED = [
    re.compile(r"\b(?:instead of|replacing|rather than|in place of)\s+([^,.;:!?]+)", re.I),
    re.compile(r"\bfrom\s+(?!now\b)((?:[^\s,.;:!?]+\s+){0,3}?[^\s,.;:!?]+)\s+to\s+\S", re.I),
    # Names and ids only (case-sensitive capital): "stop sending invoices to Priya Varga".
    re.compile(r"\b(?i:stop|don't|do not)\s+(?:\w+\s+){0,4}?(?i:to|use|using)\s+"
               r"([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)"),
    re.compile(r"(?:^|[;:]\s*|,\s+|\band\s+)([^,.;:!?]+?)\s+(?:fell through|is gone|"
               r"no longer works|is off|is out|is cancelled|is canceled)\b", re.I),
    re.compile(r",\s*not\s+([^,.;:!?]+)", re.I),
    re.compile(r"([$€£]?\d[\d,.]*\d)\s+(?:\w+\s+)?(?:is gone|no longer works|is off the table)",
               re.I),
]


def replaced_values(text: str) -> list[set[str]]:
    """Content stems of the values a turn says are replaced ("PDF instead of Google Sheets" ->
    {google, sheet}; "moved from September 19 to December 16" -> {septemb, 19})."""
    out: list[set[str]] = []
    for pat in _REPLACED:
        for m in pat.finditer(text):
            st = stems(m.group(1)) | set(re.findall(r"\d+", m.group(1)))
            if st and len(st) <= 4:
                out.append(st)
    return out
