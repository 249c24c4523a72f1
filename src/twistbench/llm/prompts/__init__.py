"""The prompts of the LLM roles, shipped as files in this package (and in the wheel).

Each file has a `[system]` section and a `[user]` section, each on a line of its own; the
user section holds `{{name}}` slots. A prompt's sha256 is taken over its text with line ends
normalised to LF, so a checkout with CRLF line ends hashes the same. A run puts the hashes of
the prompts it used, beside the model name, into its manifest and config fingerprint: a
changed word in a prompt is a changed configuration.

    prompt = load_prompt("judge_locomo")
    messages = prompt.render(question=q, gold_answer=gold, generated_answer=answer)
    manifest["prompts"] = prompt_hashes(["judge_locomo"])

The prompts:
    answerer          question + retrieved memories (ids) -> short answer citing memory ids
    judge_locomo      LoCoMo "J": question, gold, generated answer -> CORRECT / WRONG
    judge_track_c     question, the chain's states, answer -> current / stale / hedged / other
    draft_alignment   draft + retrieved record excerpts -> aligned? + contradicted ids
    session_tensions  new session + earlier turns -> self-contradictions with both sides' ids
    extractor         Mem0-style: stored memories + new turns -> ADD / UPDATE / DELETE + turn ids
    tiap_audit        TIAP semantic audit (tiap-paper §3.3): supports / partial / does_not_support
    locomo_restyle    one injected TWIST-LoCoMo 2.0 turn + the speaker's own LoCoMo turns ->
                      the turn in the speaker's voice (plain text; itemgen/locomo_restyle.py)
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

from twistbench.errors import InputError

SLOT = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_SECTION = re.compile(r"^\[(system|user)\][ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Prompt:
    """One prompt file: its text, sha256, the two sections and the user section's slots."""

    name: str
    text: str
    sha256: str
    system: str
    user: str
    slots: tuple[str, ...]

    def render(self, **values: str) -> list[dict[str, str]]:
        """Chat messages with every slot filled. A missing, unknown or non-string value is an
        error (a typo must not send a prompt with a hole in it)."""
        missing = [s for s in self.slots if s not in values]
        unknown = sorted(set(values) - set(self.slots))
        if missing or unknown:
            raise KeyError(f"prompt {self.name!r}: missing {missing}, unknown {unknown}; "
                           f"its slots are {list(self.slots)}")
        for key, value in values.items():
            if not isinstance(value, str):
                raise TypeError(f"prompt {self.name!r}: slot {key!r} takes a str, "
                                f"got {type(value).__name__}")
        # One pass: text inside a value is never read as a slot.
        user = SLOT.sub(lambda m: values[m.group(1)], self.user)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def available_prompts() -> list[str]:
    """Names of the prompt files shipped in this package."""
    return sorted(entry.name.removesuffix(".txt")
                  for entry in resources.files(__name__).iterdir()
                  if entry.name.endswith(".txt"))


@functools.cache
def load_prompt(name: str) -> Prompt:
    """The prompt called `name` (file `<name>.txt` in this package)."""
    entry = resources.files(__name__).joinpath(f"{name}.txt")
    if not entry.is_file():
        raise InputError("prompt", f"no prompt called {name!r}",
                         expected=f"one of {', '.join(available_prompts())}")
    text = entry.read_bytes().decode("utf-8").replace("\r\n", "\n")
    return _parse(name, text)


def _parse(name: str, text: str) -> Prompt:
    marks = list(_SECTION.finditer(text))
    if [m.group(1) for m in marks] != ["system", "user"] or text[:marks[0].start()].strip():
        raise InputError(f"prompt {name}.txt", "a prompt file is a [system] section followed "
                         "by a [user] section", expected="'[system]' and '[user]' lines, once each")
    system = text[marks[0].end():marks[1].start()].strip()
    user = text[marks[1].end():].strip()
    if SLOT.search(system):
        raise InputError(f"prompt {name}.txt", "slots belong in the [user] section",
                         expected="a fixed system text (servers cache it as a prefix)")
    slots = tuple(dict.fromkeys(m.group(1) for m in SLOT.finditer(user)))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Prompt(name, text, digest, system, user, slots)


def prompt_text(name: str) -> tuple[str, str]:
    """(text, sha256) of a prompt, as a manifest records it."""
    prompt = load_prompt(name)
    return prompt.text, prompt.sha256


def prompt_hashes(names: Iterable[str] | None = None) -> dict[str, str]:
    """{name: sha256} for the given prompts (all shipped prompts by default)."""
    return {name: load_prompt(name).sha256 for name in (names or available_prompts())}


def format_lines(entries: Iterable[tuple[str, str]]) -> str:
    """'[id] text' lines, the form every prompt here reads memories and turns in. Line breaks
    inside a text are folded so that one entry stays one line."""
    return "\n".join(f"[{entry_id}] {' '.join(text.split())}" for entry_id, text in entries)
