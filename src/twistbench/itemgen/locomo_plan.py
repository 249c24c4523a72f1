"""TWIST-LoCoMo 2.0: the plan every conversation's author works from (banks/locomo/plan.toml).

The plan is drawn once, seeded, from the LoCoMo session dates and the contrast bank, and committed:
- appended sessions (3 per conversation, dated 9-24 days apart after the last session) and the
  date of the drafts (the day after the last appended session);
- Track A contrast sets: each bank target closes a reversal arc in one conversation and a hard-
  negative arc in another (fixed offsets on the ring of the ten conversations, so every
  conversation gets 6 + 6), and is said once more as a plain distractor in a third;
- Track A slots: 12 per conversation (target session, third of the session the target sits in,
  the window of sessions its anchor may come from), all drawn from one distribution and only then
  given their labels at random, so that session, position and gap say nothing about the label;
- Track B: every wording is contradicting in one conversation and aligned or hard-negative (its
  pair) in another, 10/5/5 per conversation;
- quotas for Tracks C and D per conversation (sizes of whitepaper §4.3, LoCoMo column).

`twist`-independent on purpose: run `python -m twistbench.itemgen.locomo_plan --locomo PATH` to
(re)write plan.toml and docs/keys/locomo-assignment.md; a test checks that both are what this
module draws.
"""

from __future__ import annotations

import argparse
import random
import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from twistbench.datasets.locomo import load_locomo
from twistbench.errors import InputError

BANK_PACKAGE = "twistbench.itemgen"
BANK_DIR = ("banks", "locomo")
PLAN_SEED = 20261201
CONVERSATIONS = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44", "conv-47",
                 "conv-48", "conv-49", "conv-50")
APPENDED = 3
# Ring offsets: target k of conversation i is a hard negative in i + HN_OFFSETS[k] and a plain
# distractor in i + DISTRACTOR_OFFSETS[k]; an aligned-pair wording is contradicting in
# i + ALIGNED_OFFSETS[k], a hard-negative-pair wording in i + HN_PAIR_OFFSETS[k].
HN_OFFSETS = (1, 2, 3, 4, 6, 7)
DISTRACTOR_OFFSETS = (4, 6, 7, 1, 2, 3)
ALIGNED_OFFSETS = (1, 2, 3, 4, 5)
HN_PAIR_OFFSETS = (5, 6, 7, 8, 9)
MIN_ARC_GAP_DAYS = 14
APPENDED_TARGET_SHARE = 0.25
# Whitepaper §4.3 (LoCoMo column) spread over ten conversations.
CHAIN_FAMILIES = {"one_update": 3, "two_updates": 3, "coexisting": 3}
PII_FORMS = ("pattern", "spelled", "split", "sensitive")
BUSINESS_CONTROLS = ("phone", "email")
EMOTIONAL = (5, 5, 5, 5, 5, 5, 5, 5, 4, 4)
CRISIS = (3, 3, 3, 3, 2, 2, 2, 2, 2, 2)


def bank_path(name: str) -> Path:
    """A file of the LoCoMo banks (inside the installed package)."""
    return Path(str(resources.files(BANK_PACKAGE).joinpath(*BANK_DIR, name)))


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), f"not valid TOML: {exc}") from exc


def load_contrast() -> dict[str, Any]:
    return read_toml(bank_path("contrast.toml"))


def load_plan() -> dict[str, Any]:
    return read_toml(bank_path("plan.toml"))


def locomo_date_text(d: datetime) -> str:
    """LoCoMo's session date style: '1:56 pm on 8 May, 2023'."""
    hour = d.hour % 12 or 12
    half = "am" if d.hour < 12 else "pm"
    return f"{hour}:{d.minute:02d} {half} on {d.day} {d.strftime('%B')}, {d.year}"


@dataclass
class _Sessions:
    numbers: list[int]  # original then appended
    dates: dict[int, datetime]
    original: list[int]
    appended: list[int]


def _draw_appended(rng: random.Random, dates: dict[int, datetime], last: int
                   ) -> dict[int, datetime]:
    out: dict[int, datetime] = {}
    d = dates[last]
    for k in range(1, APPENDED + 1):
        d = (d + timedelta(days=rng.randint(9, 24))).replace(
            hour=rng.choice([9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]),
            minute=rng.randrange(0, 60))
        out[last + k] = d
    return out


def _arc_slots(rng: random.Random, ss: _Sessions) -> list[dict[str, Any]]:
    """12 slots from one distribution (labels are given afterwards)."""
    first = ss.dates[ss.original[0]]
    late_orig = [s for s in ss.original[2:]
                 if (ss.dates[s] - first).days >= MIN_ARC_GAP_DAYS]
    slots = []
    for _ in range(12):
        if rng.random() < APPENDED_TARGET_SHARE:
            target = rng.choice(ss.appended)
        else:
            target = rng.choice(late_orig)
        anchors = [s for s in ss.original if s < target
                   and (ss.dates[target] - ss.dates[s]).days >= MIN_ARC_GAP_DAYS]
        a = rng.choice(anchors)
        lo = max(ss.original[0], a - 1)
        hi = min(a + 1, max(anchors))
        slots.append({"target_session": target, "target_third": rng.randint(1, 3),
                      "anchor_sessions": [lo, hi]})
    return slots


def make_plan(session_dates: dict[str, dict[int, datetime]], speakers: dict[str, list[str]],
              contrast: dict[str, Any], seed: int = PLAN_SEED) -> dict[str, Any]:
    """The plan for the ten conversations (session dates: conversation -> session -> date)."""
    rng = random.Random(seed)
    n = len(CONVERSATIONS)
    targets = [t["id"] for t in contrast["target"]]
    aligned_w = [w["id"] for w in contrast["wording"] if w["pair"] == "aligned"]
    hn_w = [w["id"] for w in contrast["wording"] if w["pair"] == "hard_negative"]
    if len(targets) != n * len(HN_OFFSETS):
        raise ValueError(f"the bank has {len(targets)} targets, the plan needs "
                         f"{n * len(HN_OFFSETS)}")
    if len(aligned_w) != n * len(ALIGNED_OFFSETS) or len(hn_w) != n * len(HN_PAIR_OFFSETS):
        raise ValueError("the bank needs 50 aligned-pair and 50 hard-negative-pair wordings")
    t_order = rng.sample(targets, len(targets))
    a_order = rng.sample(aligned_w, len(aligned_w))
    h_order = rng.sample(hn_w, len(hn_w))

    convs: dict[str, dict[str, Any]] = {}
    sessions: dict[str, _Sessions] = {}
    for cid in CONVERSATIONS:
        dates = dict(session_dates[cid])
        original = sorted(dates)
        app = _draw_appended(rng, dates, original[-1])
        dates.update(app)
        sessions[cid] = _Sessions(original + sorted(app), dates, original, sorted(app))
        last = dates[max(app)]
        convs[cid] = {
            "speakers": speakers[cid],
            "last_original_session": original[-1],
            "appended": [{"session": s, "date": app[s].strftime("%Y-%m-%d %H:%M"),
                          "date_text": locomo_date_text(app[s])} for s in sorted(app)],
            "draft_date": (last + timedelta(days=1)).strftime("%Y-%m-%d"),
            "arc": [], "draft": [], "distractor": [],
        }
    # Track A: members onto the ring, then onto slots.
    uses: dict[str, list[tuple[str, str]]] = {cid: [] for cid in CONVERSATIONS}
    for i, cid in enumerate(CONVERSATIONS):
        for k in range(len(HN_OFFSETS)):
            member = t_order[i * len(HN_OFFSETS) + k]
            uses[cid].append((member, "reversal"))
            uses[CONVERSATIONS[(i + HN_OFFSETS[k]) % n]].append((member, "hard_negative"))
            convs[CONVERSATIONS[(i + DISTRACTOR_OFFSETS[k]) % n]]["distractor"].append(
                {"member": member})
    for cid in CONVERSATIONS:
        slots = _arc_slots(rng, sessions[cid])
        labels = ["reversal"] * 6 + ["hard_negative"] * 6
        rng.shuffle(labels)
        rev = [m for m, lab in uses[cid] if lab == "reversal"]
        hn = [m for m, lab in uses[cid] if lab == "hard_negative"]
        rng.shuffle(rev)
        rng.shuffle(hn)
        rev_fam = ["drift_flip"] * 2 + ["direct"] * 4
        hn_fam = ["consistent"] * 3 + ["acknowledged_change"] * 3
        rng.shuffle(rev_fam)
        rng.shuffle(hn_fam)
        arcs = []
        for j, (slot, lab) in enumerate(zip(slots, labels, strict=True)):
            member = rev.pop() if lab == "reversal" else hn.pop()
            fam = rev_fam.pop() if lab == "reversal" else hn_fam.pop()
            arcs.append({"slot": f"s{j + 1:02d}", "label": lab, "family": fam, "member": member,
                         **slot})
        convs[cid]["arc"] = arcs
    # Track B: wordings onto the ring.
    for i, cid in enumerate(CONVERSATIONS):
        for k, off in enumerate(ALIGNED_OFFSETS):
            member = a_order[i * len(ALIGNED_OFFSETS) + k]
            convs[cid]["draft"].append({"member": member, "label": "aligned"})
            convs[CONVERSATIONS[(i + off) % n]]["draft"].append(
                {"member": member, "label": "contradicting"})
        for k, off in enumerate(HN_PAIR_OFFSETS):
            member = h_order[i * len(HN_PAIR_OFFSETS) + k]
            convs[cid]["draft"].append({"member": member, "label": "hard_negative"})
            convs[CONVERSATIONS[(i + off) % n]]["draft"].append(
                {"member": member, "label": "contradicting"})
    for i, cid in enumerate(CONVERSATIONS):
        convs[cid]["draft"].sort(key=lambda d: (d["label"], _id_num(d["member"])))
        convs[cid]["distractor"].sort(key=lambda d: _id_num(d["member"]))
        convs[cid]["quota"] = {
            "chains": dict(CHAIN_FAMILIES), "pii_forms": list(PII_FORMS),
            "business_controls": list(BUSINESS_CONTROLS), "emotional": EMOTIONAL[i],
            "crisis": CRISIS[i]}
    return {"seed": seed, "conversations": convs}


def _id_num(member: str) -> int:
    return int(member.rsplit(".", 1)[1])


def _q(v: Any) -> str:
    """A TOML value for the plain types the plan holds."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_q(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_q(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def render_plan(plan: dict[str, Any]) -> str:
    out = [("# TWIST-LoCoMo 2.0 plan: drawn by twistbench.itemgen.locomo_plan (seed "
           f"{plan['seed']}). Do not edit by hand."), f"seed = {plan['seed']}", ""]
    for cid, c in plan["conversations"].items():
        p = f'conversations."{cid}"'
        out.append(f"[{p}]")
        for key in ("speakers", "last_original_session", "draft_date", "quota"):
            out.append(f"{key} = {_q(c[key])}")
        out.append("")
        for sect in ("appended", "arc", "draft", "distractor"):
            for row in c[sect]:
                out.append(f"[[{p}.{sect}]]")
                out.extend(f"{k} = {_q(v)}" for k, v in row.items())
                out.append("")
    return "\n".join(out)


def render_assignment(plan: dict[str, Any], contrast: dict[str, Any]) -> str:
    """docs/keys/locomo-assignment.md: what each conversation's author must write."""
    texts = {t["id"]: t for t in contrast["target"]} | {w["id"]: w for w in contrast["wording"]}
    where: dict[str, list[str]] = {}
    for cid, c in plan["conversations"].items():
        for a in c["arc"]:
            where.setdefault(a["member"], []).append(f"{cid} {a['label']}")
        for d in c["distractor"]:
            where.setdefault(d["member"], []).append(f"{cid} distractor")
        for d in c["draft"]:
            where.setdefault(d["member"], []).append(f"{cid} {d['label']}")
    lines = ["# TWIST-LoCoMo 2.0: assignment of the contrast sets to conversations", "",
             ("Generated from `src/twistbench/itemgen/banks/locomo/plan.toml` by "
             "`python -m twistbench.itemgen.locomo_plan`; do not edit. How to use it: "
             "[locomo-authoring.md](locomo-authoring.md)."), ""]
    for cid, c in plan["conversations"].items():
        lines += [f"## {cid} ({' and '.join(c['speakers'])})", "",
                  "Appended sessions: " + "; ".join(
                      f"{a['session']} = {a['date_text']}" for a in c["appended"])
                  + f". Drafts are dated {c['draft_date']}.", "",
                  ("Track A arcs (target session exact; target in the given third of its session; "
                  "anchor in a session of the window):"), "",
                  ("| slot | label | family | member | target session | third | anchor sessions "
                  "| target | also used in |"), "|---|---|---|---|---|---|---|---|---|"]
        for a in c["arc"]:
            others = ", ".join(w for w in where[a["member"]] if not w.startswith(cid + " "))
            lines.append(f"| {a['slot']} | {a['label']} | {a['family']} | {a['member']} | "
                         f"{a['target_session']} | {a['target_third']} | "
                         f"{a['anchor_sessions'][0]}-{a['anchor_sessions'][1]} | "
                         f"{texts[a['member']]['text']} | {others} |")
        lines += ["", "Track A distractors (say the target as a plain line, no arc):", "",
                  "| member | target | arcs in |", "|---|---|---|"]
        for d in c["distractor"]:
            others = ", ".join(w for w in where[d["member"]] if "distractor" not in w)
            lines.append(f"| {d['member']} | {texts[d['member']]['text']} | {others} |")
        lines += ["", "Track B drafts:", "", "| member | label | wording | other use |",
                  "|---|---|---|---|"]
        for d in c["draft"]:
            others = ", ".join(w for w in where[d["member"]] if not w.startswith(cid + " "))
            lines.append(f"| {d['member']} | {d['label']} | {texts[d['member']]['text']} | "
                         f"{others} |")
        q = c["quota"]
        chains = ", ".join(f"{v} {k}" for k, v in q["chains"].items())
        lines += ["", (f"Quotas: chains {chains} (27 queries); PII plants "
                  f"{', '.join(q['pii_forms'])} (8 probes); business-contact controls "
                  f"{', '.join(q['business_controls'])}; emotional negatives {q['emotional']}; "
                  f"crisis plants {q['crisis']} (opt-in file)."), ""]
    return "\n".join(lines)


def session_dates_from_locomo(path: str | Path) -> tuple[dict[str, dict[int, datetime]],
                                                          dict[str, list[str]]]:
    corpus = load_locomo(path)
    dates = {c.id: {s: evs[0].timestamp for s, evs in c.sessions()} for c in corpus.conversations}
    return dates, {c.id: list(c.speakers) for c in corpus.conversations}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", required=True, help="path of locomo10.json")
    ap.add_argument("--docs", default="docs/keys/locomo-assignment.md")
    args = ap.parse_args(argv)
    dates, speakers = session_dates_from_locomo(args.locomo)
    contrast = load_contrast()
    plan = make_plan(dates, speakers, contrast)
    bank_path("plan.toml").write_text(render_plan(plan), encoding="utf-8")
    Path(args.docs).write_text(render_assignment(plan, contrast), encoding="utf-8")


if __name__ == "__main__":
    main()
