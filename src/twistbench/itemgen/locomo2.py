"""TWIST-LoCoMo 2.0: the key assembled from the per-conversation authoring files.

`build_locomo2` reads the plan (banks/locomo/plan.toml), the contrast bank (contrast.toml) and one
authoring file per conversation (banks/locomo/<conv>.toml, and <conv>.crisis.toml for the opt-in
crisis key), checks every rule of docs/keys/locomo-authoring.md (itemgen/locomo_authoring.py),
numbers the turns and writes a key laid out like 1.0's (itemgen/locomo_inject.py): our turns, the
gold of the four tracks, the appended sessions, the QA re-validation, all bound to the sha256 of
locomo10.json. Nothing is drawn at random here except the order of the drafts
(seeded), so a build reproduces the key byte for byte.

Ids: every turn of a conversation, LoCoMo's and ours, is renumbered "D<session>:<n>" in merged
order (LoCoMo's own form), so no id tells a system which turns we wrote. The key stores our turns
with their final ids, which are also their places; the loader (datasets/twist_locomo.py) puts
LoCoMo's turns in the other places in their order, maps LoCoMo QA and errata evidence to the new
ids, and keeps which turns are ours and each original's LoCoMo id in Dataset.meta, never in an
event. In the crisis key the crisis exchanges take places too, so later ids of their sessions
differ from the default key's. Timestamps are not stored: the loader gives every turn of a session
the session's date plus one minute per position, so neither seconds nor gaps mark a turn as ours.

A build needs all ten conversations; `conversations=[...]` builds a partial key (version
"twist-locomo-2.0-partial") for tests and for authors checking their conversation in place.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from twistbench.datasets.keyfile import write_key
from twistbench.datasets.locomo import LocomoCorpus, load_locomo
from twistbench.datasets.paths import locomo2_key_path
from twistbench.datasets.twist_locomo import KEY2_VERSION as KEY_VERSION
from twistbench.datasets.twist_locomo import KEY_NAME, dataset_from_payload
from twistbench.errors import InputError
from twistbench.itemgen.gate import KeyGate
from twistbench.itemgen.locomo_authoring import (
    Placed,
    Turn,
    ack_problems,
    authoring_path,
    check_conversation,
    content_words,
    duplicate_problems,
    fill,
    plan_problems,
    strip_image,
)
from twistbench.itemgen.locomo_plan import (
    CONVERSATIONS,
    bank_path,
    load_contrast,
    load_plan,
    read_toml,
)
from twistbench.itemgen.locomo_restyle import RestyleUse, restyled_documents
from twistbench.itemgen.revalidate import keyword_stems, revalidate
from twistbench.model import (
    CrisisPlant,
    Draft,
    EmotionalHardNegative,
    HardNegativeArc,
    PIIPlant,
    ReversalArc,
    UpdateChain,
)

CRISIS_VERSION = "twist-locomo-2.0+crisis"
PARTIAL_SUFFIX = "-partial"
DRAFT_ORDER_SEED = 20261201
MAX_PROBLEMS_SHOWN = 12
DRAFT_FAMILY = {"contradicting": "contradicts_record", "aligned": "consistent",
                "hard_negative": "acknowledges_change"}


@dataclass
class Build2Report:
    """What `twist build locomo --version 2.0` prints."""

    version: str
    conversations: list[str]
    counts: dict[str, int]
    injected_turns: int
    appended_sessions: int
    qa_total: int
    qa_excluded: int
    missing: list[str] = field(default_factory=list)
    key_sha256: str = ""
    restyled: int = 0  # turns whose restyle (banks/locomo/restyle) was applied
    stale: list[str] = field(default_factory=list)  # "<conv> <ref>": entries not applied

    def render(self) -> str:
        lines = [(f"TWIST-LoCoMo key {self.version}: {len(self.conversations)} conversation(s) "
                 f"({', '.join(self.conversations)})")]
        if self.key_sha256:
            lines.append(f"key sha256 {self.key_sha256}")
        if self.missing:
            lines.append(f"NOT WRITTEN YET: {', '.join(self.missing)}")
        lines.append(f"injected turns {self.injected_turns}, appended sessions "
                     f"{self.appended_sessions}")
        if self.restyled or self.stale:
            lines.append(f"restyled turns {self.restyled}; stale restyle entries "
                         f"{len(self.stale)} (authored text changed since the restyle; kept as "
                         f"written){': ' + ', '.join(self.stale) if self.stale else ''}")
        lines += [f"  {k:22s} {v:4d}" for k, v in self.counts.items()]
        lines.append(f"LoCoMo QA of these conversations: {self.qa_total} before re-validation, "
                     f"{self.qa_total - self.qa_excluded} after ({self.qa_excluded} excluded)")
        return "\n".join(lines)


def written_conversations() -> list[str]:
    """The conversations whose authoring file exists (in plan order)."""
    return [c for c in CONVERSATIONS if authoring_path(c).exists()]


def _problems_error(where: str, problems: list[str]) -> InputError:
    shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
    more = f" (and {len(problems) - MAX_PROBLEMS_SHOWN} more)" if len(problems) > \
        MAX_PROBLEMS_SHOWN else ""
    return InputError(where, f"{len(problems)} rule(s) broken: {shown}{more}",
                      expected="a file that passes `python -m twistbench.itemgen.locomo_read "
                      "<conv> --check`")


def build_locomo2(locomo_path: str | Path, include_crisis: bool = False,
                  conversations: list[str] | None = None,
                  restyle_folder: Path | None = None) -> tuple[dict[str, Any], Build2Report]:
    """The 2.0 key payload. `conversations` None = all ten (refused when one is missing).
    The restyle files (`restyle_folder`, default banks/locomo/restyle; itemgen/locomo_restyle.py)
    replace the authored turns whose text they were made from; with none, nothing changes."""
    corpus = load_locomo(locomo_path)
    plan, contrast = load_plan(), load_contrast()
    plan_broken = plan_problems(plan, contrast)
    if plan_broken:
        raise _problems_error(str(bank_path("plan.toml")), plan_broken)
    wanted = list(conversations) if conversations is not None else list(CONVERSATIONS)
    unknown = [c for c in wanted if c not in CONVERSATIONS]
    if unknown:
        raise InputError("--conversations", f"unknown conversation(s) {unknown}",
                         expected=f"some of {', '.join(CONVERSATIONS)}")
    missing = [c for c in wanted if not authoring_path(c).exists()]
    if missing:
        have = written_conversations()
        raise InputError(str(authoring_path(missing[0])),
                         f"TWIST-LoCoMo 2.0 needs all ten conversations; not written yet: "
                         f"{', '.join(missing)} ({len(have)} of {len(CONVERSATIONS)} written: "
                         f"{', '.join(have) or 'none'})",
                         expected="every conversation's authoring file, or --conversations with "
                         "the ones that exist for a partial key")
    placed: dict[str, Placed] = {}
    restyles: dict[str, RestyleUse] = {}
    for cid in wanted:
        raw = read_toml(authoring_path(cid))
        craw = None
        if include_crisis:
            cpath = authoring_path(cid, crisis=True)
            if not cpath.exists():
                raise InputError(str(cpath), "the crisis key needs every conversation's crisis "
                                 "file", expected=f"{cpath.name}")
            craw = read_toml(cpath)
        raw, craw, use = restyled_documents(cid, raw, craw, restyle_folder)
        if use is not None:
            restyles[cid] = use
        p = check_conversation(corpus, cid, plan, contrast, raw, craw)
        if p.problems:
            # with a restyle applied, name its file too: the authored file alone may pass
            where = str(authoring_path(cid)) + (f" with {use.file.path}" if use else "")
            raise _problems_error(where, p.problems)
        placed[cid] = p
    repeated = ack_problems(placed) + duplicate_problems(placed, include_crisis)
    if repeated:
        raise _problems_error(", ".join(str(authoring_path(c)) for c in placed), repeated)
    partial = conversations is not None and set(wanted) != set(CONVERSATIONS)
    payload = _payload(corpus, plan, contrast, placed, include_crisis, partial)
    if restyles:
        payload["meta"] = {"restyle": _restyle_meta(restyles)}
    version = KEY_VERSION + (PARTIAL_SUFFIX if partial else "") + ("+crisis" if include_crisis
                                                                    else "")
    gold = payload["gold"]
    counts = {k: len(v) for k, v in gold.items()}
    counts["chain_queries"] = sum(len(c["queries"]) for c in gold["update_chains"])
    counts["pii_probes"] = sum(len(p["probes"]) for p in gold["pii_plants"])
    labels = Counter(d["label"] for d in gold["drafts"])
    for lab in ("contradicting", "aligned", "hard_negative"):
        counts[f"drafts_{lab}"] = labels[lab]
    fams = Counter(e.get("family", "emotional") for e in gold["emotional_negatives"])
    counts["controls_emotional"] = fams["emotional"]
    counts["controls_business_contact"] = fams["business_contact"]
    qa_total = sum(1 for q in corpus.qa if q.conversation in placed)
    report = Build2Report(
        version=version, conversations=list(placed), counts=counts,
        injected_turns=len(payload["turns"]), appended_sessions=len(payload["appended_sessions"]),
        qa_total=qa_total, qa_excluded=len(payload["revalidation"]["excluded"]),
        missing=[c for c in CONVERSATIONS if c not in placed],
        restyled=sum(u.applied for u in restyles.values()),
        stale=[f"{c} {r}" for c, u in restyles.items() for r in u.stale])
    return payload, report


def _restyle_meta(restyles: dict[str, RestyleUse]) -> dict[str, Any]:
    """What the key records of its restyle: per conversation the file's model, prompt sha256
    and date, and how many of its entries this build applied and found stale."""
    per = {cid: {"model": u.file.provenance["model"],
                 "endpoint_host": u.file.provenance["endpoint_host"],
                 "prompt_sha256": u.file.provenance["prompt_sha256"],
                 "date": u.file.provenance["date"], "accepted": u.applied,
                 "stale": len(u.stale)} for cid, u in restyles.items()}
    return {"models": sorted({m["model"] for m in per.values()}),
            "prompt_sha256": sorted({m["prompt_sha256"] for m in per.values()}),
            "accepted": sum(m["accepted"] for m in per.values()),
            "stale": sum(m["stale"] for m in per.values()), "conversations": per}


# ---------------------------------------------------------------------------------------------
# Assembly


def _number_turns(p: Placed, include_crisis: bool) -> dict[str, str]:
    """ref -> final id. Every turn of a session, LoCoMo's and ours, is renumbered D<s>:<n> in
    merged order (n from 1), so an id says nothing about who wrote the turn. Crisis turns count
    only in the crisis key (whose later ids in that session shift by one)."""
    ids: dict[str, str] = {}
    for s in sorted(p.sessions):
        n = 0
        for t in p.sessions[s]:
            if t.crisis and not include_crisis:
                continue
            n += 1
            ids[t.ref] = f"D{s}:{n}"
    return ids


def _keywords(p: Placed, turn: Turn) -> list[str]:
    """Subject words of one turn for QA re-validation: the insert's keywords that this turn
    mentions (a partner's reply that does not name the subject perturbs nothing), else, when the
    insert names none, every content word of the turn."""
    text_stems = keyword_stems(content_words(strip_image(turn.text)))
    for doc in (p.raw, p.crisis_raw or {}):
        for ins in doc.get("insert", []):
            if ins.get("id") == turn.insert and "keywords" in ins:
                return sorted({k for k in ins["keywords"] if keyword_stems([k]) <= text_stems})
    return sorted(set(content_words(strip_image(turn.text))))


def _payload(corpus: LocomoCorpus, plan: dict[str, Any], contrast: dict[str, Any],
             placed: dict[str, Placed], include_crisis: bool, partial: bool) -> dict[str, Any]:
    targets = {t["id"]: t for t in contrast["target"]}
    wordings = {w["id"]: w for w in contrast["wording"]}
    turns_out: list[dict[str, Any]] = []
    appended: list[dict[str, Any]] = []
    gold: dict[str, list[dict[str, Any]]] = {f: [] for f in (
        "reversal_arcs", "hard_negative_arcs", "drafts", "update_chains", "pii_plants",
        "crisis_plants", "emotional_negatives")}
    arc_ids: dict[tuple[str, str], str] = {}  # (conversation, member) -> arc id
    for cid, p in placed.items():
        seen: Counter[str] = Counter()
        for a in sorted(p.plan["arc"], key=lambda a: a["slot"]):
            seen[a["label"]] += 1
            prefix = "A" if a["label"] == "reversal" else "N"
            arc_ids[(cid, a["member"])] = f"{cid}:{prefix}{seen[a['label']]}"
    # QA re-validation reads where each of our turns sits among the original ones: `after`
    # chains in the authoring refs (original dia_ids and our "i07.2"), which never collide.
    placed_turns: list[dict[str, Any]] = []
    for cid, p in placed.items():
        ids = _number_turns(p, include_crisis)
        for s in sorted(p.sessions):
            prev: str | None = None
            for t in p.sessions[s]:
                if t.ref not in ids:
                    continue  # a crisis turn left out of the default key
                if t.injected:
                    row = {"conversation": cid, "id": ids[t.ref], "session": s,
                           "speaker": t.speaker, "text": t.text}
                    if t.image:
                        row["image"] = t.image.strip()
                    row.update({"channel": "chat", "source": t.ref,
                                "keywords": _keywords(p, t)})
                    turns_out.append(row)
                    placed_turns.append({**row, "id": t.ref, "after": prev, "name": ids[t.ref]})
                prev = t.ref
        for a in p.plan["appended"]:
            appended.append({"conversation": cid, "session": a["session"],
                             "date_text": a["date_text"],
                             "timestamp": datetime.strptime(a["date"], "%Y-%m-%d %H:%M")
                             .isoformat()})
        _gold_arcs(p, cid, ids, targets, arc_ids, gold)
        _gold_drafts(p, cid, ids, wordings, gold)
        _gold_chains(p, cid, ids, gold)
        _gold_safety(p, cid, ids, include_crisis, gold)
    excluded = revalidate(corpus, placed_turns)
    return {
        "locomo_sha256": corpus.sha256,
        "plan_seed": plan["seed"],
        "conversations": list(placed),
        "partial": partial,
        "turns": turns_out,
        "appended_sessions": appended,
        "gold": gold,
        "revalidation": {"rule": "same speaker and shared subject keyword, or an injected turn "
                                 "between two evidence turns of the question",
                         "excluded": [{"qa": q, "reason": r} for q, r in excluded]},
        "ids": "every turn D<session>:<n> in merged order; LoCoMo's turns fill the places our "
               "turns do not take, in their order",
        "timestamps": "session date + one minute per position in the session (every turn)",
    }


def _gold_arcs(p: Placed, cid: str, ids: dict[str, str], targets: dict[str, Any],
               arc_ids: dict[tuple[str, str], str], gold: dict[str, list[Any]]) -> None:
    slots = {a["slot"]: a for a in p.plan["arc"]}
    for table, field_name in (("reversal", "reversal_arcs"), ("hard_negative",
                                                              "hard_negative_arcs")):
        for arc in sorted(p.raw.get(table, []), key=lambda a: a["slot"]):
            slot = slots[arc["slot"]]
            member = slot["member"]
            target = p.by_ref[arc["target"]]
            anchors = [p.by_ref[r] for r in arc["anchor"]]
            gap = (p.session_dates[target.session] - max(p.session_dates[a.session]
                                                         for a in anchors)) / timedelta(days=1)
            meta = {"member": member, "slot": arc["slot"], "form": targets[member]["form"],
                    "values": dict(arc.get("values", {})), "target_session": target.session,
                    "target_third": slot["target_third"], "gap_days": round(gap, 1),
                    "checked_originals": list(arc.get("checked_originals", [])),
                    "note": arc.get("note", "")}
            if arc.get("ack"):
                # The acknowledgement is record, like the anchor: the look-alike turn a system
                # must not flag is the target alone (with the ack among `turns`, the number and
                # the text of an arc's turns told the label: A.nontext 0.75 on target_turns).
                meta["ack"] = [ids[r] for r in arc["ack"]]
            other = _other_use(arc_ids, cid, member)
            topic = fill(targets[member]["text"], arc.get("values", {}))
            common = {"id": arc_ids[(cid, member)], "conversation": cid,
                      "speaker": arc["speaker"], "topic": f"{member}:{topic}",
                      "family": slot["family"], "anchor": [ids[r] for r in arc["anchor"]],
                      "meta": meta}
            if table == "reversal":
                item = ReversalArc(**common, drift=[ids[r] for r in arc.get("drift", [])],
                                   reversal=[ids[arc["target"]]], paired_negative=other)
            else:
                item = HardNegativeArc(**common, turns=[ids[arc["target"]]],
                                       paired_reversal=other)
            gold[field_name].append(item.model_dump(mode="json"))


def _other_use(arc_ids: dict[tuple[str, str], str], cid: str, member: str) -> str | None:
    """The arc closed by the same target in another conversation (None in a partial build)."""
    others = [v for (c, m), v in sorted(arc_ids.items()) if m == member and c != cid]
    return others[0] if others else None


def _gold_drafts(p: Placed, cid: str, ids: dict[str, str], wordings: dict[str, Any],
                 gold: dict[str, list[Any]]) -> None:
    rows = sorted(p.raw.get("draft", []), key=lambda d: (d["member"], d["label"]))
    # Ids in a seeded order, so that the id says nothing about the label.
    order = list(range(len(rows)))
    random.Random(f"{DRAFT_ORDER_SEED}:{cid}").shuffle(order)
    for k, row in sorted(zip(order, rows, strict=True), key=lambda kr: kr[0]):
        vals = dict(row.get("values", {}))
        item = Draft(id=f"{cid}:B{k + 1}", conversation=cid, label=row["label"],
                     family=DRAFT_FAMILY[row["label"]], speaker=row["addressee"],
                     text=fill(wordings[row["member"]]["text"], vals),
                     evidence=[ids[r] for r in row["evidence"]], rationale=row["rationale"],
                     meta={"member": row["member"], "values": vals,
                           "date": p.plan["draft_date"]})
        gold["drafts"].append(item.model_dump(mode="json"))


def _gold_chains(p: Placed, cid: str, ids: dict[str, str], gold: dict[str, list[Any]]) -> None:
    for c in p.raw.get("chain", []):
        cur_all = c["family"] == "coexisting"
        n = len(c["states"])
        chain_id = f"{cid}:{c['id']}"
        item = UpdateChain(
            id=chain_id, conversation=cid, speaker=c["speaker"], subject=c["subject"],
            family=c["family"],
            states=[{"value": st["value"], "variants": list(st.get("variants", [])),
                     "turns": [ids[r] for r in st["turns"]],
                     "current": cur_all or j == n - 1} for j, st in enumerate(c["states"])],
            queries=[{"id": f"{chain_id}:{kind}", "kind": kind, "text": c["queries"][kind]}
                     for kind in ("current", "history", "post_resolution")],
            meta={"later_mentions": [ids[r] for r in c.get("later_mentions", [])],
                  "sessions": [p.by_ref[st["turns"][0]].session for st in c["states"]]})
        gold["update_chains"].append(item.model_dump(mode="json"))


def _gold_safety(p: Placed, cid: str, ids: dict[str, str], include_crisis: bool,
                 gold: dict[str, list[Any]]) -> None:
    for x in p.raw.get("pii", []):
        pid = f"{cid}:{x['id']}"
        turns = [ids[r] for r in x["turns"]]
        parts = list(x.get("parts", [])) or (_split_parts(x["value"]) if x["form"] == "split"
                                             else [])
        item = PIIPlant(id=pid, conversation=cid, kind=x["kind"], value=x["value"],
                        owner=x["owner"], turn=turns[0], turns=turns if len(turns) > 1 else [],
                        parts=parts,
                        probes=[{"id": f"{pid}:{k}", "kind": k, "text": x["probes"][k]}
                                for k in ("direct", "indirect")],
                        meta={"speaker": x["speaker"], "form": x["form"]})
        gold["pii_plants"].append(item.model_dump(mode="json"))
    for fam, table in (("business_contact", "control"), ("emotional", "emotional")):
        for x in p.raw.get(table, []):
            eid = f"{cid}:{x['id']}"
            speaker = x.get("speaker") or p.by_ref[x["turn"]].speaker
            item = EmotionalHardNegative(
                id=eid, conversation=cid, speaker=speaker, turn=ids[x["turn"]],
                probe={"id": f"{eid}:probe", "kind": "direct", "text": x["probe"]},
                expected=list(x["expected"]), family=fam,
                meta={"category": x.get("category", x.get("kind", ""))})
            gold["emotional_negatives"].append(item.model_dump(mode="json"))
    if include_crisis and p.crisis_raw is not None:
        for x in p.crisis_raw.get("crisis", []):
            xid = f"{cid}:{x['id']}"
            item = CrisisPlant(id=xid, conversation=cid, speaker=x["speaker"],
                               turn=ids[x["turn"]],
                               probes=[{"id": f"{xid}:probe", "kind": "indirect",
                                        "text": x["probe"]}],
                               key_phrases=list(x["key_phrases"]))
            gold["crisis_plants"].append(item.model_dump(mode="json"))


def _split_parts(value: str) -> list[str]:
    """'27 Wrenfield Avenue' -> ['27', 'Wrenfield Avenue']: the number and the rest."""
    m = re.match(r"^\s*(\d+)\s+(.+)$", value)
    return [m.group(1), m.group(2)] if m else []


# ---------------------------------------------------------------------------------------------
# Writing and loading


def write_locomo2_key(out: str | Path | None, locomo_path: str | Path,
                      include_crisis: bool = False,
                      conversations: list[str] | None = None, *,
                      gate: KeyGate | None = None,
                      restyle_folder: Path | None = None) -> tuple[str, Build2Report]:
    """`twist build locomo --version 2.0`: build, check with `gate` (the CLI passes the shortcut
    audit, as for 1.0: itemgen.locomo_inject.write_locomo_key) and write. A gate that raises
    leaves nothing written; what it returns goes into payload["meta"]["gates"]. A partial key is
    never written to the committed path, and is not gated: the audit's leave-one-conversation-out
    classifiers need the conversations the partial key leaves out (benchmarks/
    locomo2_partial_gates.py measures a partial key instead)."""
    payload, report = build_locomo2(locomo_path, include_crisis, conversations, restyle_folder)
    if payload["partial"] and out is None:
        raise InputError("--out", "a partial key (some conversations only) is not written over "
                         "the committed key", expected="--out PATH")
    path = Path(out) if out else locomo2_key_path(include_crisis)
    if gate is not None and not payload["partial"]:
        dataset = dataset_from_payload(load_locomo(locomo_path), payload, version=report.version,
                                       key_sha256="", key_file=str(path))
        gate_meta = gate.before_write(dataset)
        if gate_meta is not None:
            payload["meta"] = {**payload.get("meta", {}), "gates": gate_meta}
    digest = write_key(path, KEY_NAME, report.version, payload)
    if gate is not None and not payload["partial"]:
        gate.after_write(path)
    report.key_sha256 = digest
    return digest, report
