"""Agreement figures against independent implementations (scikit-learn, statsmodels), the
family threshold, and the adjudication queue."""

from __future__ import annotations

import math

import numpy as np
import pytest
from annotate_helpers import manifest_of, other_choice, write_answers
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from twistbench.annotate.agreement import compute_agreement, render_markdown, write_agreement
from twistbench.annotate.answers import read_answers
from twistbench.annotate.packet import export_packets
from twistbench.errors import InputError


def _plant(m, every: int, offset: int = 0) -> dict[str, str]:
    """Disagree with the key on every `every`-th item (per track order of the manifest)."""
    items = list(m["items"])
    return {i: other_choice(m, i) for i in items[offset::every]}


@pytest.fixture(scope="module")
def two(packet, tmp_path_factory):
    m = manifest_of(packet)
    d = tmp_path_factory.mktemp("two")
    r1 = read_answers(write_answers(d, m, "r1", _plant(m, 7)), m)
    r2 = read_answers(write_answers(d, m, "r2", _plant(m, 5, 2)), m)
    return m, r1, r2, compute_agreement(m, [r1, r2])


def test_track_kappa_and_confusion_match_scikit_learn(two):
    m, r1, r2, res = two
    assert res.method == "cohen"
    for track, fig in res.tracks.items():
        ids = [i for i in m["items"] if m["items"][i]["track"] == track]
        a = [r1.categories[i] for i in ids]
        b = [r2.categories[i] for i in ids]
        assert fig.n == len(ids)
        assert fig.kappa == pytest.approx(cohen_kappa_score(a, b, labels=fig.categories),
                                          abs=1e-12)
        assert fig.raw == pytest.approx(np.mean([x == y for x, y in zip(a, b)]))
        assert fig.confusion["r1 x r2"] == sk_confusion(a, b, labels=fig.categories).tolist()
        gold = [m["items"][i]["gold"] for i in ids]
        assert fig.vs_key["r2"]["kappa"] == pytest.approx(
            cohen_kappa_score(b, gold, labels=fig.categories), abs=1e-12)
        lo, hi = fig.kappa_ci
        assert lo <= hi and -1 <= lo and hi <= 1


def test_family_kappas_average_to_the_track_kappa(two):
    _, _, _, res = two
    for track, fig in res.tracks.items():
        fams = [f for name, f in res.families.items() if name.startswith(track + "/")]
        weighted = sum(f.n * f.kappa_track for f in fams) / sum(f.n for f in fams)
        assert weighted == pytest.approx(fig.kappa, abs=1e-12)
        assert sum(f.n for f in fams) == fig.n


def test_a_single_label_family_is_judged_against_its_tracks_chance(packet, tmp_path):
    """9 of 10 agreements inside a family whose key answer is one label: the family's own kappa
    collapses to zero (prevalence paradox); against the track's chance agreement it is 0.8."""
    m = manifest_of(packet)
    fam = "A/nostalgia"
    members = [i for i in m["items"] if m["items"][i]["family"] == fam]
    one = members[0]
    r1 = read_answers(write_answers(tmp_path, m, "r1"), m)
    r2 = read_answers(write_answers(tmp_path, m, "r2", {one: other_choice(m, one)}), m)
    fig = compute_agreement(m, [r1, r2]).families[fam]
    assert fig.raw == pytest.approx(1 - 1 / len(members))
    assert fig.kappa == pytest.approx(0.0, abs=1e-12)  # p_o equals p_e within the family
    ids = [i for i in m["items"] if m["items"][i]["track"] == "A"]
    a, b = [r1.categories[i] for i in ids], [r2.categories[i] for i in ids]
    p_e = sum(a.count(c) * b.count(c) for c in set(a) | set(b)) / len(ids) ** 2
    assert p_e == pytest.approx(0.5, abs=0.01)  # A is half tension, half no_tension
    assert fig.kappa_track == pytest.approx((0.9 - p_e) / (1 - p_e), abs=1e-12)
    assert fig.passes
    # every answer one label across the whole track: kappa undefined, agreement perfect
    only = compute_agreement(m, [r1, read_answers(write_answers(tmp_path, m, "r2"), m)])
    assert only.families[fam].passes and only.families[fam].raw == 1.0


def test_fleiss_for_three_annotators_matches_statsmodels(cs, tmp_path):
    out = tmp_path / "three"
    export_packets(cs, out, annotators=3, seed=5, sample=60, examples=0)
    m = manifest_of(out)
    raters = [read_answers(write_answers(tmp_path, m, a, _plant(m, k, k)), m)
              for a, k in (("r1", 3), ("r2", 4), ("r3", 5))]
    res = compute_agreement(m, raters)
    assert res.method == "fleiss"
    for track, fig in res.tracks.items():
        ids = [i for i in m["items"] if m["items"][i]["track"] == track]
        table = np.array([[sum(r.categories[i] == c for r in raters) for c in fig.categories]
                          for i in ids])
        want = sm_fleiss(table)
        assert (math.isnan(fig.kappa) and math.isnan(want)) or \
            fig.kappa == pytest.approx(want, abs=1e-12)
    assert set(res.tracks["A"].confusion) == {"r1 x r2", "r1 x r3", "r2 x r3"}


def test_queue_holds_disagreements_and_disagreements_with_the_key(packet, tmp_path):
    m = manifest_of(packet)
    items = list(m["items"])
    both, split = items[0], items[1]
    r1 = read_answers(write_answers(tmp_path, m, "r1", {both: other_choice(m, both)},
                                    notes={both: "the record says otherwise"}), m)
    r2 = read_answers(write_answers(tmp_path, m, "r2", {both: other_choice(m, both),
                                                        split: other_choice(m, split)}), m)
    res = compute_agreement(m, [r1, r2])
    q = {e["item"]: e for e in res.queue}
    assert set(q) == {both, split}
    assert q[both]["why"] == "the annotators agree with each other, not with the key"
    assert q[split]["why"] == "the annotators disagree"
    assert q[both]["notes"]["r1"] == "the record says otherwise"
    assert q[both]["key_answer"] == m["items"][both]["gold"]
    written = write_agreement(res, m, tmp_path / "adj")
    assert [p.name for p in written] == ["agreement.md", "agreement.json", "queue.jsonl",
                                         "queue.csv"]
    assert "Cohen's kappa" in render_markdown(res)
    with pytest.raises(InputError, match="queue already"):
        write_agreement(res, m, tmp_path / "adj")


def test_one_file_per_annotator(packet, tmp_path):
    m = manifest_of(packet)
    r1 = read_answers(write_answers(tmp_path, m, "r1"), m)
    with pytest.raises(InputError, match="second answer file of annotator r1"):
        compute_agreement(m, [r1, r1])
    with pytest.raises(InputError, match="two or more"):
        compute_agreement(m, [r1])
