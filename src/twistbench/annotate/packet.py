"""`twist annotate export`: blind packets, one per annotator, and the coordinator's manifest.

Layout of the output folder (written to a temporary folder and renamed: never half-written):

    manifest.json        the coordinator's: key version and sha256, seeds, every annotator's
                         codes, each item's gold, family and text. Never sent to an annotator.
    README.md            what to send to whom, and what comes back.
    r1/ r2/ ...          one folder per annotator, sent as is:
        guide.md         the annotation guide with worked examples (items not in the packet)
        form.html        a self-contained offline form; answers are downloaded as JSON or CSV
        packet.csv       one row per item (the item as text, its choices, empty answer/note)
        packet.jsonl     a header line, then one structured item per line
        conversations/   the full record of every conversation in the packet
        README.txt       how to answer and what to send back

Blindness: an item is shown by a per-annotator code (a hash of the seed, annotator and item:
nothing in it repeats across annotators or follows the key's ids) and by its position in that
annotator's order (tracks in order A-D, items shuffled within each track with the annotator's
seed). No item id, turn id, family, label, rationale, evidence list or probe is written into
an annotator's folder (tests/annotate/test_packet.py scans for them).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import random
import secrets
import shutil
import tempfile
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from twistbench.annotate.excerpts import (
    ItemView,
    Record,
    Settings,
    item_view,
    render_record,
    render_view,
)
from twistbench.annotate.form import render_form
from twistbench.annotate.guide import build_guide
from twistbench.annotate.labels import (
    TRACK_FIELDS,
    TRACKS,
    category_order,
    family_of,
    gold_category,
)
from twistbench.errors import InputError
from twistbench.model import Dataset, HardNegativeArc

PACKET_FORMAT = "twist-annotation-packet/1"
MANIFEST_FORMAT = "twist-annotation-manifest/1"
ANSWERS_FORMAT = "twist-annotation-answers/1"
CSV_COLUMNS = ["packet", "annotator", "key_version", "key_sha256", "seq", "code", "track", "item",
               "choices", "answer", "note"]
CODE_LENGTH = 10


@dataclass
class Unit:
    """One annotatable item of the key with its view (what annotators see) and its gold."""

    item_id: str
    track: str
    family: str
    conversation: str
    gold: str
    view: ItemView


@dataclass
class ExportResult:
    out: Path
    packet: str
    annotators: list[str]
    items: int
    examples: list[str]
    per_track: dict[str, int] = field(default_factory=dict)
    seed: int = 0


def annotation_units(dataset: Dataset, tracks: list[str], settings: Settings) -> list[Unit]:
    """Every item of the given tracks, in key order, as a Unit. A hard negative with no earlier
    statement of its own is shown with its paired reversal's anchor (the same topic), when that
    reversal is in the same conversation."""
    records = {c.id: Record(c) for c in dataset.conversations}
    arcs = {a.id: a for a in dataset.reversal_arcs}
    units: list[Unit] = []
    for track in tracks:
        for fld in TRACK_FIELDS[track]:
            for item in getattr(dataset, fld):
                shown = item
                if isinstance(item, HardNegativeArc) and not item.anchor:
                    pair = arcs.get(item.paired_reversal or "")
                    if pair is None or pair.conversation != item.conversation:
                        raise InputError(item.id, "a hard negative without an earlier statement "
                                         "and without a paired reversal in its conversation "
                                         "cannot be shown blind", field="anchor",
                                         expected="an anchor turn")
                    shown = item.model_copy(update={"anchor": list(pair.anchor)})
                rec = records[item.conversation]
                view = item_view(shown, rec.conversation, settings, rec)
                units.append(Unit(item_id=item.id, track=track, family=family_of(item),
                                  conversation=item.conversation, gold=gold_category(item),
                                  view=view))
    return units


def pick_examples(units: list[Unit], seed: int, per_category: int = 1) -> list[Unit]:
    """Worked examples for the guide: per track, `per_category` items of each gold category."""
    rng = random.Random(f"{seed}:examples")
    by: dict[tuple[str, str], list[Unit]] = defaultdict(list)
    for u in units:
        by[(u.track, u.gold)].append(u)
    chosen: list[Unit] = []
    for track in TRACKS:
        cats = category_order(track, {g for t, g in by if t == track})
        for cat in cats:
            pool = by.get((track, cat), [])
            if pool:
                chosen += rng.sample(pool, min(per_category, len(pool)))
    return chosen


def pick_sample(units: list[Unit], n: int, seed: int) -> list[Unit]:
    """n items spread over the tracks (round robin), each track's order shuffled with the seed:
    a pilot round, or the sample shown in a report."""
    rng = random.Random(f"{seed}:sample")
    per_track: dict[str, list[Unit]] = defaultdict(list)
    for u in units:
        per_track[u.track].append(u)
    for lst in per_track.values():
        rng.shuffle(lst)
    out: list[Unit] = []
    while len(out) < n and any(per_track.values()):
        for track in TRACKS:
            if per_track.get(track) and len(out) < n:
                out.append(per_track[track].pop())
    return out


def _hash(*parts: object) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()


def annotator_ids(n: int) -> list[str]:
    if n < 2:
        raise InputError("--annotators", f"{n}", expected="at least 2 annotators (§6.1: two "
                         "independent annotations per label)")
    return [f"r{i + 1}" for i in range(n)]


def order_for(units: list[Unit], annotator_seed: int) -> list[Unit]:
    """An annotator's order: tracks A-D, items shuffled within each track."""
    rng = random.Random(annotator_seed)
    out: list[Unit] = []
    for track in TRACKS:
        block = [u for u in units if u.track == track]
        rng.shuffle(block)
        out += block
    return out


def item_json(seq: int, code: str, view: ItemView) -> dict[str, Any]:
    return {"seq": seq, "code": code, "track": view.track, "conversation": view.conversation,
            "lead": view.lead,
            "excerpts": [{"gap": ex.gap, "turns": [asdict(t) for t in ex.turns]}
                         for ex in view.excerpts],
            "legend": view.legend, "question": view.question,
            "choices": [{"code": c.code, "text": c.text} for c in view.choices],
            "answer": "", "note": ""}


def export_packets(dataset: Dataset, out: str | Path, annotators: int = 2,
                   seed: int | None = None, settings: Settings | None = None,
                   tracks: list[str] | None = None, sample: int | None = None,
                   examples: int = 1, source: dict[str, Any] | None = None,
                   on: date | None = None) -> ExportResult:
    """Write blind packets for `annotators` annotators of `dataset` into the folder `out`
    (which must not exist or be empty). `seed` None draws one (it is recorded)."""
    out = Path(out)
    settings = settings or Settings()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(str(out), "exists and is not empty", field="-o",
                         expected="a new folder for the packets")
    tracks = tracks or list(TRACKS)
    bad = [t for t in tracks if t not in TRACKS]
    if bad:
        raise InputError("--track", f"unknown track {bad[0]!r}", expected=" | ".join(TRACKS))
    ids = annotator_ids(annotators)
    seed = secrets.randbelow(2**31) if seed is None else seed
    units = annotation_units(dataset, tracks, settings)
    shown = pick_examples(units, seed, examples) if examples > 0 else []
    shown_ids = {u.item_id for u in shown}
    pool = [u for u in units if u.item_id not in shown_ids]
    if sample is not None:
        pool = pick_sample(pool, sample, seed)
    if not pool:
        raise InputError(dataset.name, "no items to annotate in these tracks",
                         expected="a key with items of tracks " + ", ".join(tracks))
    packet = _hash(dataset.key_sha256, seed, annotators, *sorted(u.item_id for u in pool))[:12]
    key = {"name": dataset.name, "version": dataset.version, "sha256": dataset.key_sha256}
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT, "packet": packet, "created": (on or date.today()).isoformat(),
        "key": key, "source": source or {}, "seed": seed, "settings": asdict(settings),
        "tracks": tracks, "sample": sample, "examples": sorted(shown_ids),
        "items": {u.item_id: {"track": u.track, "family": u.family,
                              "conversation": u.conversation, "gold": u.gold,
                              "choices": u.view.choice_categories,
                              "text": render_view(u.view)} for u in pool},
        "annotators": {},
        # every item of the exported tracks by family: a family below the agreement threshold
        # is dropped whole, examples and unsampled items included
        "family_members": {fam: sorted(u.item_id for u in units if u.family == fam)
                           for fam in sorted({u.family for u in units})},
    }
    taken: set[str] = set()
    ex_views = defaultdict(list)
    for u in shown:
        ex_views[u.track].append((u.view, u.gold, u.family))
    used_tracks = [t for t in tracks if any(u.track == t for u in pool)]
    guide = build_guide(dataset.version, used_tracks, ex_views)
    convs = {c.id: c for c in dataset.conversations}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for aid in ids:
            a_seed = int(_hash(seed, aid)[:8], 16)
            order = order_for(pool, a_seed)
            codes: dict[str, str] = {}
            for u in order:
                salt = 0
                code = _hash(seed, packet, aid, u.item_id)[:CODE_LENGTH]
                while code in taken:  # a collision, vanishingly rare: rehash deterministically
                    salt += 1
                    code = _hash(seed, packet, aid, u.item_id, salt)[:CODE_LENGTH]
                taken.add(code)
                codes[code] = u.item_id
            manifest["annotators"][aid] = {"seed": a_seed, "codes": codes, "order": list(codes)}
            header = {"format": PACKET_FORMAT, "packet": packet, "annotator": aid, "key": key,
                      "items": len(order), "tracks": used_tracks,
                      "answers_format": ANSWERS_FORMAT}
            rows = [item_json(i + 1, code, u.view)
                    for i, (code, u) in enumerate(zip(codes, order, strict=True))]
            _write_annotator(tmp / aid, header, rows, [u.view for u in order], guide,
                             {u.conversation: convs[u.conversation] for u in order})
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True,
                                                      ensure_ascii=False) + "\n",
                                           encoding="utf-8")
        (tmp / "README.md").write_text(_coordinator_readme(packet, key, ids, len(pool),
                                                           sorted(shown_ids)), encoding="utf-8")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; a plain mkdir would not
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    per_track = {t: sum(1 for u in pool if u.track == t) for t in used_tracks}
    return ExportResult(out=out, packet=packet, annotators=ids, items=len(pool),
                        examples=sorted(shown_ids), per_track=per_track, seed=seed)


def packet_csv(header: dict[str, Any], rows: list[dict[str, Any]], views: list[ItemView]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for row, view in zip(rows, views, strict=True):
        w.writerow({"packet": header["packet"], "annotator": header["annotator"],
                    "key_version": header["key"]["version"],
                    "key_sha256": header["key"]["sha256"], "seq": row["seq"],
                    "code": row["code"], "track": row["track"], "item": render_view(view),
                    "choices": " | ".join(c["code"] for c in row["choices"]), "answer": "",
                    "note": ""})
    return buf.getvalue()


def _write_annotator(folder: Path, header: dict[str, Any], rows: list[dict[str, Any]],
                     views: list[ItemView], guide: str, convs: dict[str, Any]) -> None:
    (folder / "conversations").mkdir(parents=True)
    lines = [json.dumps(header, ensure_ascii=False, sort_keys=True)]
    lines += [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows]
    (folder / "packet.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "packet.csv").write_text(packet_csv(header, rows, views), encoding="utf-8")
    (folder / "guide.md").write_text(guide, encoding="utf-8")
    records = {cid: render_record(c) for cid, c in sorted(convs.items())}
    for cid, text in records.items():
        (folder / "conversations" / f"{cid}.txt").write_text(text, encoding="utf-8")
    (folder / "form.html").write_text(render_form(header, rows, guide, records),
                                      encoding="utf-8")
    (folder / "README.txt").write_text(_annotator_readme(header), encoding="utf-8")


def _annotator_readme(header: dict[str, Any]) -> str:
    return f"""Annotation packet {header['packet']}, annotator {header['annotator']}
Key: {header['key']['version']} (sha256 {header['key']['sha256']})

1. Read guide.md first: what each answer means, with worked examples.
2. Answer every item, on your own: do not discuss items with other annotators and do not look
   at the key or its generator. Either
   - open form.html in a browser (works offline; your answers are kept in the browser as you
     go) and press "Download answers (JSON)" when done, or
   - fill the "answer" column (one code from the "choices" column) and, if you like, the "note"
     column of packet.csv, and save it as CSV.
3. Send back the downloaded answers-{header['packet']}-{header['annotator']}.json (or your CSV).
   Keep the packet and answer columns as they are: they tell the coordinator whose answers
   these are.

The full record of every conversation is in conversations/ (and at the end of form.html).
"""


def _coordinator_readme(packet: str, key: dict[str, str], ids: list[str], n: int,
                        examples: list[str]) -> str:
    folders = ", ".join(f"{a}/" for a in ids)
    return f"""# Annotation packet {packet}

Key {key['version']}, sha256 `{key['sha256']}`. {n} items for each of {len(ids)} annotators
({folders}); {len(examples)} items are worked examples in the guide and are not annotated.

- Send each annotator their own folder, nothing else. **Keep `manifest.json`**: it maps every
  annotator's codes to the key's items and holds the gold; an annotator must never see it.
- Answers come back as JSON (from form.html) or CSV (packet.csv with the answer column filled).
- Then: `twist annotate agreement --packet <this folder> ANSWERS_r1 ANSWERS_r2 ... -o QUEUE_DIR`,
  the adjudicator fills the decision columns of QUEUE_DIR/queue.csv, and
  `twist annotate adjudicate KEY QUEUE_DIR/queue.jsonl QUEUE_DIR/queue.csv` writes the next key
  version. See docs/annotation/README.md.
"""
