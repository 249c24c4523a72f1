"""Filling bank lines: slots, possessives, articles, sentence capitals, spelled-out numbers.

`fill` is the only way a bank line becomes text, so every grammar rule the key promises is applied
in one place and checked in one place (`grammar_problems`, run on every text of a built key by the
build and by tests).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_SLOT = re.compile(r"\{(\w+)\}")
# "{company}'s" after a value ending in s is written "Fernhill Foods'", not "Foods's"
_POSSESSIVE = re.compile(r"\{(\w+)\}'s\b")
# "a {x}" where the value starts with a vowel sound
_ARTICLE = re.compile(r"\b([Aa]) \{(\w+)\}")
_SENTENCE_START = re.compile(r"(^|[.!?]\s+|\n\s*)([a-z])")


class FillError(ValueError):
    """A bank line names a slot that was not given (the message names the line)."""


def slots_of(template: str) -> list[str]:
    """The slot names a template uses, in order of first use."""
    return list(dict.fromkeys(_SLOT.findall(template)))


def _an(value: str) -> bool:
    low = value.lower()
    if re.match(r"(one\b|once|uni|use|usu|eu|ur)", low):
        return False
    if re.match(r"(hour|honest|heir)", low) or re.match(r"(\$?8|\$?1[18](\D|$))", low):
        return True
    if re.match(r"[aeiou]", low):
        return True
    # initialisms read letter by letter: an SLA, an HR team, an MFA prompt
    return bool(re.match(r"[FHLMNRSX][A-Z]", value))


def fill(template: str, slots: Mapping[str, str], where: str = "", cap: bool = True) -> str:
    """Fill `{slot}`s; fix possessives of values ending in s and a/an before a slot; capitalise
    sentence starts (unless cap is False: a phrase, not a sentence). Raises FillError naming
    `where` for a slot that has no value."""
    missing = [s for s in slots_of(template) if s not in slots]
    if missing:
        raise FillError(f"{where or template!r}: no value for slot(s) {', '.join(missing)}")

    def poss(m: re.Match[str]) -> str:
        v = str(slots[m.group(1)])
        return v + ("'" if v.endswith("s") else "'s")

    def art(m: re.Match[str]) -> str:
        a = m.group(1)
        v = str(slots[m.group(2)])
        return (a + "n" if _an(v) else a) + " " + v

    text = _POSSESSIVE.sub(poss, template)
    text = _ARTICLE.sub(art, text)
    text = _SLOT.sub(lambda m: str(slots[m.group(1)]), text)
    return capitalise(text) if cap else text


def address(text: str, name: str, how: str, proper: frozenset[str]) -> str:
    """Address a line to someone by first name, as people do in Slack and on calls.
    how: "at" ('@Dana we ...'), "front" ('Dana, we ...'), "end" ('..., Dana.' before the last
    full stop or question mark). The first letter is lower-cased after a name unless the first
    word is 'I' (I'm, I'll ...) or a proper noun in `proper`."""
    if how == "end":
        m = re.search(r"([.?!])\s*$", text)
        if not m:
            return f"{text}, {name}"
        return f"{text[:m.start()]}, {name}{m.group(1)}"
    first = re.match(r"[\w$'-]+", text)
    word = first.group(0) if first else ""
    keep = (word in proper or re.match(r"I\b|I'", word) is not None or word.isupper()
            or any(ch.isdigit() for ch in word) or word.startswith("$"))
    body = text if keep else text[:1].lower() + text[1:]
    return f"@{name} {body}" if how == "at" else f"{name}, {body}"


def capitalise(text: str) -> str:
    """Upper-case the first letter of the text and of each sentence."""
    return _SENTENCE_START.sub(lambda m: m.group(1) + m.group(2).upper(), text)


_DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def spell_digits(digits: str, groups: tuple[int, ...]) -> str:
    """'4155550142', (3, 3, 4) -> 'four one five, five five five, zero one four two'."""
    out, i = [], 0
    for g in groups:
        out.append(" ".join(_DIGIT_WORDS[int(c)] for c in digits[i:i + g]))
        i += g
    return ", ".join(out)


def spell_email(address: str) -> str:
    """'dana.ortiz7@homemail.example' -> 'dana dot ortiz seven at homemail dot example'."""
    local, _, domain = address.partition("@")

    def words(part: str) -> str:
        toks = []
        for chunk in re.findall(r"[a-z]+|\d", part):
            toks.append(_DIGIT_WORDS[int(chunk)] if chunk.isdigit() else chunk)
        return " ".join(toks)

    return " at ".join([" dot ".join(words(p) for p in local.split(".")),
                        " dot ".join(words(p) for p in domain.split("."))])


# ---------------------------------------------------------------------------------------------
# Grammar checks on generated text (the key's promise, issue 12)

_ARTICLE_VOWEL = re.compile(r"\b[Aa] ([aeiouAEIOU8][\w-]*)")
_AN_CONSONANT = re.compile(r"\b[Aa]n ([b-df-hj-np-tv-zB-DF-HJ-NP-TV-Z][\w-]*)")
_A_OK = re.compile(r"(one|once|uni|use|usu|eu|ur|UK|US|UX|UI)", re.IGNORECASE)
_AN_OK = re.compile(r"(hour|honest|heir|[FHLMNRSX][A-Z]|SLA|HR|MFA|NDA|SSO)")
_DOUBLE_WORD = re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)
_DOUBLE_WORD_OK = {"that", "had", "very", "bye", "no", "ha", "so", *_DIGIT_WORDS}
_DOUBLE_PUNCT = re.compile(r"[.,;:!?]{2,}|\s[.,;:!?]")
_PUNCT_OK = {"...", "?!", "!?"}


def grammar_problems(text: str, possessive_names: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with a generated text: a/an, doubled words, doubled punctuation, unfilled
    slots, '<name ending in s>'s', a lower-case sentence start. Empty when clean."""
    probs = []
    for m in _ARTICLE_VOWEL.finditer(text):
        if not _A_OK.match(m.group(1)):
            probs.append(f"'a {m.group(1)}'")
    for m in _AN_CONSONANT.finditer(text):
        if not _AN_OK.match(m.group(1)):
            probs.append(f"'an {m.group(1)}'")
    for m in _DOUBLE_WORD.finditer(text):
        if m.group(1).lower() not in _DOUBLE_WORD_OK:
            probs.append(f"doubled word {m.group(0)!r}")
    for m in _DOUBLE_PUNCT.finditer(text):
        if m.group(0) not in _PUNCT_OK:
            probs.append(f"punctuation {m.group(0)!r}")
    if "{" in text or "}" in text:
        probs.append("unfilled slot")
    for name in possessive_names:
        if name.endswith("s") and f"{name}'s" in text:
            probs.append(f"'{name}'s'")
    if capitalise(text) != text:
        probs.append("lower-case sentence start")
    return probs
