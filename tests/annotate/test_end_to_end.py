"""End to end, as the coordinator runs it: `twist annotate export` -> two annotators' files with
planted disagreements -> `twist annotate agreement` -> the adjudicator's decisions ->
`twist annotate adjudicate` -> the next key version with exactly the expected items dropped."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from annotate_helpers import KEY, manifest_of, other_choice, write_answers

from twistbench.datasets.registry import load_dataset
from twistbench.datasets.twist_cs import load_cs_dataset
from twistbench.model import Dataset


def twist(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "twistbench.cli", *args], capture_output=True,
                          text=True, timeout=300)


def _fill(queue_csv: Path, decisions: dict[str, dict[str, str]], out: Path) -> Path:
    rows = list(csv.DictReader(queue_csv.open()))
    for r in rows:
        r.update(decisions.get(r["item"], {}))
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return out


@pytest.fixture(scope="module")
def round_(tmp_path_factory):
    """Export, plant, agree; returns the folder, the manifest and the planted items."""
    tmp = tmp_path_factory.mktemp("e2e")
    r = twist("annotate", "export", str(KEY), "-n", "2", "--seed", "42", "-o", str(tmp / "p"))
    assert r.returncode == 0, r.stderr
    m = manifest_of(tmp / "p")
    items = m["items"]
    nostalgia = [i for i in items if items[i]["family"] == "A/nostalgia"]
    drafts = {g: [i for i in items if items[i]["track"] == "B" and items[i]["gold"] == g]
              for g in ("contradicts", "agrees")}
    chains = [i for i in items if items[i]["family"] == "C/one_update"]
    plant = {"reject": drafts["contradicts"][0], "relabel": drafts["agrees"][0],
             "keep": chains[0]}
    # r2 calls every nostalgia item a tension: that family's agreement collapses
    r2 = {i: other_choice(m, i, "tension") for i in nostalgia}
    r2[plant["reject"]] = other_choice(m, plant["reject"], "agrees")
    # both call an aligned draft a change-naming one: they agree with each other, not the key
    both = {plant["relabel"]: other_choice(m, plant["relabel"], "agrees_with_change")}
    r1 = {**both, plant["keep"]: other_choice(m, plant["keep"], "cannot_tell")}
    f1 = write_answers(tmp, m, "r1", r1, notes={plant["keep"]: "excerpts too short"})
    f2 = write_answers(tmp, m, "r2", {**r2, **both}, fmt="csv")
    r = twist("annotate", "agreement", "--packet", str(tmp / "p"), str(f1), str(f2),
              "-o", str(tmp / "adj"))
    assert r.returncode == 0, r.stderr
    return tmp, m, plant, nostalgia


def test_agreement_flags_the_planted_family_and_queues_the_planted_items(round_):
    tmp, m, plant, nostalgia = round_
    agreement = json.loads((tmp / "adj" / "agreement.json").read_text())
    failing = [f for f, fig in agreement["families"].items() if not fig["passes"]]
    assert failing == ["A/nostalgia"]
    queue = [json.loads(x) for x in (tmp / "adj" / "queue.jsonl").read_text().splitlines()]
    entries = {e["item"]: e for e in queue[1:]}
    assert set(entries) == {*nostalgia, *plant.values()}
    assert all(not entries[i]["needs_decision"] for i in nostalgia)
    assert all(entries[i]["needs_decision"] for i in plant.values())
    assert agreement["tracks"]["A"]["kappa"] < 0.8 < agreement["tracks"]["C"]["kappa"]


def test_adjudication_writes_the_next_version_with_exactly_the_expected_changes(round_):
    tmp, m, plant, nostalgia = round_
    decisions = {
        plant["reject"]: {"decision": "drop", "decision_reason": "the record is ambiguous"},
        plant["relabel"]: {"decision": "relabel", "new_label": "agrees_with_change",
                           "decision_reason": "the draft names the change"},
        plant["keep"]: {"decision": "keep", "decision_reason": "the full record settles it"},
    }
    filled = _fill(tmp / "adj" / "queue.csv", decisions, tmp / "decisions.csv")
    out = tmp / "twist-cs-1.1.json"
    r = twist("annotate", "adjudicate", str(KEY), str(tmp / "adj" / "queue.jsonl"), str(filled),
              "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "twist-cs-1.1" in r.stdout and "A/nostalgia" in r.stdout
    old, new = load_cs_dataset(), load_cs_dataset(out)

    def ids(ds: Dataset) -> set[str]:
        return {it.id for f in Dataset.ITEM_FIELDS for it in getattr(ds, f)}

    every_nostalgia = {h.id for h in old.hard_negative_arcs if h.family == "nostalgia"}
    assert set(nostalgia) <= every_nostalgia  # examples of the family are dropped as well
    assert ids(old) - ids(new) == every_nostalgia | {plant["reject"]}
    assert ids(new) < ids(old)
    assert new.version == "twist-cs-1.1" and new.key_sha256 != old.key_sha256
    relabelled = next(d for d in new.drafts if d.id == plant["relabel"])
    assert relabelled.label == "hard_negative"
    assert next(d for d in old.drafts if d.id == plant["relabel"]).label == "aligned"
    # arcs paired with a dropped negative lose the reference; nothing else changed
    paired = {a.id for a in old.reversal_arcs if a.paired_negative in every_nostalgia}
    assert {a.id for a in new.reversal_arcs if a.paired_negative is None} >= paired
    unchanged = ids(new) - {plant["relabel"], *paired}
    by_old = {it.id: it for f in Dataset.ITEM_FIELDS for it in getattr(old, f)}
    by_new = {it.id: it for f in Dataset.ITEM_FIELDS for it in getattr(new, f)}
    assert all(by_old[i] == by_new[i] for i in unchanged)
    assert new.conversations == old.conversations
    meta = new.meta
    change = meta["changelog"][-1]
    assert change["from"] == "twist-cs-1.0" and change["from_sha256"] == old.key_sha256
    assert len(change["dropped"]) == len(every_nostalgia) + 1
    assert change["relabelled"] == [{"item": plant["relabel"], "from": "aligned",
                                     "to": "hard_negative",
                                     "why": f"adjudication q{_qid(tmp, plant['relabel'])} "
                                            f"(packet {m['packet']}): the draft names the "
                                            "change"}]
    record = meta["annotation"]["twist-cs-1.1"]
    assert record["failing_families"] == record["dropped_families"] == ["A/nostalgia"]
    assert record["decisions"] == {"drop": 1, "keep": 1, "relabel": 1}
    assert record["families"]["A/nostalgia"]["kappa_track"] < 0
    assert record["annotated"] == len(m["items"])
    assert set(record["not_annotated"]) == set(m["examples"]) - every_nostalgia
    # the new version loads by path, and a second adjudication does not overwrite it
    assert load_dataset(str(out)).version == "twist-cs-1.1"
    again = twist("annotate", "adjudicate", str(KEY), str(tmp / "adj" / "queue.jsonl"),
                  str(filled), "-o", str(out))
    assert again.returncode == 2 and "exists already" in again.stderr


def _qid(tmp: Path, item: str) -> str:
    for line in (tmp / "adj" / "queue.jsonl").read_text().splitlines()[1:]:
        e = json.loads(line)
        if e["item"] == item:
            return e["queue_id"][1:]
    raise KeyError(item)


def test_bad_decisions_and_inputs_exit_2_with_one_line(round_):
    tmp, m, plant, _ = round_
    queue = str(tmp / "adj" / "queue.jsonl")
    cases = [
        ({plant["reject"]: {"decision": "drop"}}, "have no decision"),
        ({**{i: {"decision": "keep"} for i in plant.values()},
          plant["keep"]: {"decision": "relabel", "new_label": "agrees"}},
         "only a draft's label can be changed"),
        ({**{i: {"decision": "keep"} for i in plant.values()},
          plant["reject"]: {"decision": "maybe"}}, "unknown decision"),
        ({**{i: {"decision": "keep"} for i in plant.values()},
          plant["relabel"]: {"decision": "relabel", "new_label": "fine"}}, "unknown label"),
    ]
    for n, (decisions, message) in enumerate(cases):
        filled = _fill(tmp / "adj" / "queue.csv", decisions, tmp / f"bad{n}.csv")
        r = twist("annotate", "adjudicate", str(KEY), queue, str(filled), "-o",
                  str(tmp / f"bad{n}.json"))
        assert r.returncode == 2 and message in r.stderr, (message, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
        assert not (tmp / f"bad{n}.json").exists()
    # a queue for another key
    crisis = KEY.with_name("twist-cs-1.0-crisis.json")
    ok = _fill(tmp / "adj" / "queue.csv", {i: {"decision": "keep"} for i in plant.values()},
               tmp / "ok.csv")
    r = twist("annotate", "adjudicate", str(crisis), queue, str(ok), "-o", str(tmp / "x.json"))
    assert r.returncode == 2 and "the queue is for key twist-cs-1.0" in r.stderr
    # answers of r2's packet sent in as r1's
    f = write_answers(tmp, m, "r1", codes_of="r2")
    r = twist("annotate", "agreement", "--packet", str(tmp / "p"), str(f),
              str(tmp / "answers-r2.csv"), "-o", str(tmp / "adj2"))
    assert r.returncode == 2 and "another annotator's shuffle" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp / "adj2").exists()


def test_a_twist_locomo_key_goes_through_the_same_round(locomo_path, tmp_path):
    """The TWIST-LoCoMo key keeps its gold under payload.gold and its text in the user's LoCoMo
    file: a pilot round of three annotators still ends in a loadable next version."""
    from twistbench.annotate.adjudicate import adjudicate
    from twistbench.annotate.agreement import compute_agreement, write_agreement
    from twistbench.annotate.answers import read_answers
    from twistbench.annotate.packet import export_packets
    from twistbench.datasets.paths import locomo_key_path
    from twistbench.datasets.registry import DatasetOptions

    opts = DatasetOptions(locomo=locomo_path)
    ds = load_dataset("twist-locomo-1.0", opts)
    export_packets(ds, tmp_path / "p", annotators=3, seed=9, sample=24, examples=0)
    m = manifest_of(tmp_path / "p")
    draft = next(i for i in m["items"] if m["items"][i]["track"] == "B")
    raters = [read_answers(write_answers(tmp_path, m, a, choose), m) for a, choose in
              (("r1", {}), ("r2", {draft: other_choice(m, draft)}), ("r3", {}))]
    res = compute_agreement(m, raters)
    assert res.method == "fleiss" and [q["item"] for q in res.queue] == [draft]
    write_agreement(res, m, tmp_path / "adj")
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text(json.dumps({"queue_id": res.queue[0]["queue_id"], "decision": "drop",
                                     "decision_reason": "two readings"}) + "\n")
    rel, record = adjudicate(locomo_key_path(), tmp_path / "adj" / "queue.jsonl", decisions,
                             out=tmp_path / "twist-locomo-1.1.json")
    new = load_dataset(str(rel.path), opts)
    assert new.version == "twist-locomo-1.1" and record["decisions"] == {"drop": 1}
    assert draft not in {d.id for d in new.drafts} and len(new.drafts) == len(ds.drafts) - 1
    assert len(new.qa) == len(ds.qa)
    # a pilot: the draft's family fell below the threshold on its few sampled items, and is
    # reported, not dropped
    fam = m["items"][draft]["family"]
    assert fam in record["failing_families"] and record["dropped_families"] == []
    assert record["sample"] == 24
