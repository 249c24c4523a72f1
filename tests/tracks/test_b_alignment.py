"""Track B on hand-computed fixtures, the predictions exchange format, and the public key."""

import json
import random

import pytest
from twist_fixtures import FakeGuarded, conversation, dataset, err_record, ok_record

from twistbench.contract import Capabilities
from twistbench.errors import InputError
from twistbench.model import Conflict, Draft, Verdict
from twistbench.tracks.b_alignment import (
    TRACK,
    Prediction,
    read_predictions,
    records_from_predictions,
    score_item,
    score_predictions,
    write_predictions,
)
from twistbench.tracks.base import PHASE_QUERY, ConversationState

C1 = conversation("c1", [[("Ann", f"turn {i}") for i in range(6)]])
C2 = conversation("c2", [[("Bo", f"turn {i}") for i in range(3)]])
DRAFTS = [
    Draft(id="d1", conversation="c1", label="contradicting", text="draft one", evidence=["c1:1:0"]),
    Draft(id="d2", conversation="c1", label="contradicting", text="draft two", evidence=["c1:1:1"]),
    Draft(id="d3", conversation="c2", label="contradicting", text="draft three",
          evidence=["c2:1:0", "c2:1:1"]),
    Draft(id="d4", conversation="c1", label="aligned", text="draft four", evidence=["c1:1:2"]),
    Draft(id="d5", conversation="c2", label="aligned", text="draft five"),
    Draft(id="d6", conversation="c1", label="hard_negative", text="draft six"),
    Draft(id="d7", conversation="c2", label="hard_negative", text="draft seven"),
]
DS = dataset([C1, C2], drafts=DRAFTS)
CAPS = Capabilities(check_alignment=True)


def rec(did, aligned, evidence=()):
    d = next(x for x in DRAFTS if x.id == did)
    return ok_record(f"B:{did}", "B", d.label, d.conversation,
                     {"aligned": aligned, "evidence": list(evidence)})


def test_hand_computed_metrics():
    recs = [
        # flagged, gold id 4th: not attributed
        rec("d1", False, ["c1:1:5", "c1:1:4", "c1:1:3", "c1:1:0"]),
        rec("d2", False, ["c1:1:1"]),  # flagged, attributed
        rec("d3", True),  # missed
        rec("d4", True), rec("d5", False),  # aligned: 1 of 2 passed
        rec("d6", False), rec("d7", True),  # hard negatives: 1 of 2 passed
    ]
    m = TRACK.score(DS, recs, CAPS).metrics
    assert (m["contradiction_recall"].k, m["contradiction_recall"].n) == (2, 3)
    assert (m["aligned_specificity"].k, m["aligned_specificity"].n) == (1, 2)
    assert (m["hard_negative_specificity"].k, m["hard_negative_specificity"].n) == (1, 2)
    assert (m["specificity"].k, m["specificity"].n) == (2, 4)
    assert m["balanced_accuracy"].value == pytest.approx((2 / 3 + 1 / 2) / 2)  # (CR + AS) / 2
    assert (m["attribution"].k, m["attribution"].n) == (1, 2)
    assert (m["grounded_contradiction_recall"].k, m["grounded_contradiction_recall"].n) == (1, 3)


def test_balanced_accuracy_excludes_hard_negatives():
    # Every contradiction flagged, every aligned draft passed, every hard negative flagged: the
    # public definition (CR + AS) / 2 is 1.0 and the failure shows in the partner, HNS = 0.
    recs = [rec(d.id, d.label != "contradicting" and d.label != "hard_negative", d.evidence)
            for d in DRAFTS]
    m = TRACK.score(DS, recs, CAPS).metrics
    assert m["balanced_accuracy"].value == 1.0
    assert m["hard_negative_specificity"].value == 0.0
    assert m["specificity"].value == pytest.approx(2 / 4)
    assert m["balanced_accuracy"].counts == {"tp": 3, "n_pos": 3, "tn": 2, "n_neg": 2}


def test_flag_everything_and_flag_nothing():
    every = TRACK.score(DS, [rec(d.id, False, d.evidence) for d in DRAFTS], CAPS).metrics
    assert every["contradiction_recall"].value == 1.0
    assert every["hard_negative_specificity"].value == 0.0
    assert every["aligned_specificity"].value == 0.0
    assert every["balanced_accuracy"].value == 0.5
    assert every["attribution"].value == 1.0
    none = TRACK.score(DS, [rec(d.id, True) for d in DRAFTS], CAPS).metrics
    assert none["contradiction_recall"].value == 0.0
    assert none["hard_negative_specificity"].value == 1.0
    assert none["balanced_accuracy"].value == 0.5
    assert none["attribution"].value is None  # nothing flagged: no items, not zero
    assert none["grounded_contradiction_recall"].value == 0.0


def test_errors_are_counted_and_excluded_and_missing_items_counted():
    recs = [rec("d1", False, ["c1:1:0"]),
            err_record("B:d2", "B", "contradicting", "c1", "check_alignment")]
    res = TRACK.score(DS, recs, CAPS)
    assert res.errors == {"contradicting": 1}
    assert res.missing == {"contradicting": 1, "aligned": 2, "hard_negative": 2}
    assert res.metrics["contradiction_recall"].n == 1
    assert res.metrics["hard_negative_specificity"].value is None


def test_not_applicable():
    assert TRACK.score(DS, [], Capabilities(recall=True)).status == "n/a"
    assert TRACK.score(dataset([C1]), [], CAPS).status == "n/a"
    assert TRACK.tasks(DS, "c1", Capabilities()) == []


def test_task_flattens_conflict_evidence_in_order_without_duplicates():
    tasks = TRACK.tasks(DS, "c1", CAPS)
    assert [t.item_id for t in tasks] == ["B:d1", "B:d2", "B:d4", "B:d6"]
    assert all(t.phase == PHASE_QUERY for t in tasks) and tasks[0].kind == "contradicting"
    v = Verdict(aligned=False, conflicts=[Conflict(evidence=["c1:1:3", "c1:1:0"]),
                                          Conflict(evidence=["c1:1:0", "c1:1:1"])])
    g = FakeGuarded(verdicts={"draft one": v})
    out = tasks[0].run(g, ConversationState(conversation=C1))
    assert g.calls == [("check_alignment", "draft one")]
    assert out["aligned"] is False and out["evidence"] == ["c1:1:3", "c1:1:0", "c1:1:1"]
    assert tasks[0].score(out) == {"verdict_correct": True, "attributed": True}


def test_score_item_budget_of_three():
    d = DRAFTS[0]
    assert score_item(d, False, ["a", "b", "c1:1:0"])["attributed"] is True
    assert score_item(d, False, ["a", "b", "c", "c1:1:0"])["attributed"] is False
    assert score_item(d, True, ["c1:1:0"])["attributed"] is None
    assert score_item(DRAFTS[3], True, [])["attributed"] is None


def test_predictions_round_trip_scores_identically(tmp_path):
    recs = [rec("d1", False, ["c1:1:0"]), rec("d2", True), rec("d3", False, ["x"]),
            rec("d4", True), rec("d5", True), rec("d6", False, ["c1:1:2"]), rec("d7", True),
            err_record("B:d9", "B", "aligned", "c2")]
    lines = write_predictions(recs)
    assert json.loads(lines[0]) == {"item_id": "d1", "aligned": False, "evidence": ["c1:1:0"]}
    assert len(lines) == 7  # the error is not written
    p = tmp_path / "preds.jsonl"
    p.write_text("\n".join(lines) + "\n\n")
    preds = read_predictions(p)
    assert preds["d6"] == (False, ["c1:1:2"], 6)  # aligned, evidence, line
    direct = TRACK.score(DS, recs, CAPS)
    via_file = score_predictions(DS, p)
    assert via_file.metrics == direct.metrics


@pytest.mark.parametrize("line,field,where", [
    ("{not json", None, "line 2"),
    ("[1, 2]", None, "line 2"),
    ('{"aligned": true}', "item_id", "line 2"),
    ('{"item_id": "d2", "aligned": "false"}', "aligned", "line 2"),
    ('{"item_id": "d2", "aligned": false, "evidence": "c1:1:0"}', "evidence", "line 2"),
    ('{"item_id": "d2", "aligned": false, "evidence": [3]}', "evidence", "line 2"),
    ('{"item_id": "d1", "aligned": true}', "item_id", "line 2"),  # duplicate
])
def test_read_predictions_names_file_line_and_field(tmp_path, line, field, where):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"item_id": "d1", "aligned": false, "evidence": []}\n' + line + "\n")
    with pytest.raises(InputError) as ei:
        read_predictions(p)
    assert ei.value.file == str(p) and ei.value.where == where and ei.value.field == field


def test_prediction_for_an_unknown_draft_is_an_input_error():
    with pytest.raises(InputError) as ei:
        records_from_predictions(DS, {"nope": Prediction(True, [], 3)}, source="p.jsonl")
    assert "nope" in str(ei.value) and ei.value.field == "item_id"
    assert ei.value.file == "p.jsonl" and ei.value.where == "line 3"


def test_unknown_draft_in_a_file_names_its_line(tmp_path):
    p = tmp_path / "preds.jsonl"
    p.write_text('{"item_id": "d1", "aligned": false}\n\n{"item_id": "d9x", "aligned": true}\n')
    with pytest.raises(InputError) as ei:
        score_predictions(DS, p)
    assert ei.value.file == str(p) and ei.value.where == "line 3" and ei.value.field == "item_id"
    assert "'d9x'" in str(ei.value) and "draft id" in str(ei.value)


def _reference_scores(items, preds):
    """Independent re-statement of the public TWIST-v1.0 scorer (reference/score_track_b.py)."""
    rows = []
    for it in items:
        aligned, ev = preds[it["id"]]
        gold_aligned = it["type"] != "contradicting"
        correct = aligned == gold_aligned
        attributed = None
        if it["type"] == "contradicting" and correct:
            attributed = bool(set(ev[:3]) & set(it["evidence"]))
        rows.append((it["type"], correct, attributed))
    def k(t):
        sub = [r for r in rows if r[0] == t]
        return sum(r[1] for r in sub), len(sub)
    contra = [r for r in rows if r[0] == "contradicting"]
    flagged = [r for r in contra if r[1]]
    return {"contradiction_recall": k("contradicting"), "aligned_specificity": k("aligned"),
            "hard_negative_specificity": k("hard_negative"),
            "grounded_contradiction_recall": (sum(bool(r[2]) for r in contra), len(contra)),
            "attribution": (sum(bool(r[2]) for r in flagged), len(flagged))}


def test_public_key_scores_match_the_reference_definitions(twist_b_path, locomo_path, tmp_path):
    from twistbench.datasets.twist_b import load_twist_b

    ds = load_twist_b(twist_b_path, locomo_path)
    items = [json.loads(x) for x in twist_b_path.read_text().splitlines() if x.strip()]
    assert len(ds.drafts) == len(items) == 161
    rng = random.Random(5)
    preds = {}
    for it in items:
        conv_turns = [e.id for e in ds.conversation(it["conv"]).events]
        ev = rng.sample(conv_turns, 2) + (it["evidence"][:1] if rng.random() < 0.5 else [])
        rng.shuffle(ev)
        preds[it["id"]] = (rng.random() < 0.5, ev)
    p = tmp_path / "p.jsonl"
    p.write_text("\n".join(json.dumps({"item_id": k, "aligned": a, "evidence": e})
                           for k, (a, e) in preds.items()))
    res = score_predictions(ds, p)
    ref = _reference_scores(items, preds)
    for name, (k, n) in ref.items():
        assert (res.metrics[name].k, res.metrics[name].n) == (k, n), name
    assert res.counts == {"contradicting": 38, "aligned": 61, "hard_negative": 62}


def test_empty_inputs():
    res = TRACK.score(DS, [], CAPS)
    assert res.status == "scored" and res.errors == {}
    assert res.missing == {"contradicting": 3, "aligned": 2, "hard_negative": 2}
    assert all(m.value is None for m in res.metrics.values())
    assert write_predictions([]) == []
