"""Profile rows, paired headline cells, Markdown/JSON rendering, key checks, `twist report`."""

import json

import pytest
from pydantic import ValidationError
from toy_systems import KeywordToy

from twistbench.contract import Capabilities
from twistbench.datasets.demo import demo_dataset
from twistbench.errors import InputError
from twistbench.report.planes import planes
from twistbench.report.profile import (
    COLUMNS,
    PairedMetric,
    ProfileEntry,
    build_profile,
    group_by_key,
    make_cell,
)
from twistbench.report.render import (
    fmt_metric,
    render_cell,
    render_json,
    render_pair,
    render_profile_markdown,
)
from twistbench.report.runs import report_runs, restrict, score_folder
from twistbench.runs.runner import RunSettings, run_system
from twistbench.stats import Metric, proportion
from twistbench.tracks import RunScores, score_run
from twistbench.tracks.base import TrackResult

DS = demo_dataset()


def scores(caps, records=(), key="builtin"):
    s = score_run(DS, list(records), caps)
    return s.model_copy(update={"key_sha256": key})


def test_only_a_paired_metric_renders_in_a_headline_cell():
    m = proportion("x", 1, 2)
    with pytest.raises(TypeError):
        render_pair(m)  # a lone metric cannot be printed as a headline
    pair = PairedMetric(label="a / b", primary=m, partner=proportion("y", 0, 3))
    assert render_pair(pair).startswith("0.500 (1/2)") and " / 0.000 (0/3)" in render_pair(pair)
    with pytest.raises(ValidationError):
        PairedMetric(label="a", primary=m)  # the partner is required


def test_cells_from_track_results():
    col_a_on = next(c for c in COLUMNS if c.key == "A.online")
    col_b = next(c for c in COLUMNS if c.key == "B")
    na = TrackResult.not_applicable("B", "t", "system does not declare check_alignment")
    cell = make_cell(na, col_b)
    assert cell.status == "n/a" and cell.pair is None and render_cell(cell) == "N/A"
    a = TrackResult(track="A", title="t", status="scored", na={"online": "no online"},
                    metrics={"batch.f1": proportion("batch.f1", 1, 1),
                             "batch.false_flag_rate": proportion("b", 0, 1)})
    assert make_cell(a, col_a_on).reason == "no online"
    col_a_batch = next(c for c in COLUMNS if c.key == "A.batch")
    a.errors = {"batch": 2}
    cell = make_cell(a, col_a_batch)
    assert cell.errors == 2 and render_cell(cell).endswith("· 2 errors")


def test_profile_markdown_has_na_not_zero_and_the_key_under_the_table():
    only_recall = scores(Capabilities(recall=True))
    prof = build_profile([ProfileEntry("recall-only", only_recall)])
    md = render_profile_markdown(prof)
    head = next(line for line in md.splitlines() if line.startswith("| System"))
    row = next(line for line in md.splitlines() if line.startswith("| recall-only"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # A online, A batch, B and D are declined for the only row: no column of their own, and
    # each N/A reason is listed under the table; the judged column names its judge and that
    # judge's calibration verdict (in-memory scores: no calibration found)
    assert [c.strip() for c in head.strip("|").split("|")][1:] == [
        "LoCoMo: F1 ↑ / evidence recall ↑", "C: current ↑ / stale ↓ (judge structural: "
        "not calibrated)"]
    assert "sha256 `builtin`" in md and "demo-1" in md
    assert "recall-only · D: N/A — system declares no safety layer" in md
    assert "recall-only · A online: N/A" in md and "recall-only · B: N/A" in md
    # nothing was answered: "no items", never 0
    assert cells[2] == "no items / no items · 4 missing"


@pytest.mark.parametrize("dataset, corpus", [("locomo", "LoCoMo"), ("twist-locomo-2.0", "LoCoMo"),
                                             ("longmemeval", "LongMemEval-S"), ("beam", "BEAM")])
def test_qa_column_and_plane_name_the_runs_corpus(dataset, corpus):
    s = scores(Capabilities(recall=True))
    qa_metrics = s.tracks["locomo"].metrics  # one answered question, so the plane has a point
    qa_metrics["f1"] = proportion("f1", 1, 2)
    qa_metrics["evidence_recall"] = proportion("evidence_recall", 1, 1)
    prof = build_profile([ProfileEntry("recall-only", s)]).model_copy(update={"dataset": dataset})
    qa = next(c for c in prof.scored_columns() if c.key == "locomo")
    assert qa.title == corpus
    assert next(p for p in planes(prof) if p.key == "locomo").title == f"{corpus} QA"
    assert f"| System | {corpus}: F1 ↑ / evidence recall ↑ |" in render_profile_markdown(prof)
    # the shared COLUMNS are not renamed by a profile
    assert next(c for c in COLUMNS if c.key == "locomo").title == "LoCoMo"


def test_json_holds_everything():
    caps = Capabilities(recall=True, check_alignment=True)
    prof = build_profile([ProfileEntry("toy", scores(caps))])
    data = json.loads(render_json(prof))
    row = data["rows"][0]
    assert row["cells"]["B"]["pair"]["primary"]["name"] == "balanced_accuracy"
    assert row["cells"]["B"]["pair"]["partner"]["name"] == "hard_negative_specificity"
    assert "f1_cat4" in row["scores"]["tracks"]["locomo"]["metrics"]
    assert data["key_sha256"] == "builtin"
    m = row["scores"]["tracks"]["B"]["metrics"]["contradiction_recall"]
    assert set(m) >= {"value", "k", "n", "lo", "hi", "method"}


def test_profiles_refuse_mixed_keys_and_group_them():
    a = ProfileEntry("a", scores(Capabilities(recall=True), key="k1"), run="runs/a")
    b = ProfileEntry("b", scores(Capabilities(recall=True), key="k2"), run="runs/b")
    with pytest.raises(InputError) as ei:
        build_profile([a, b])
    assert ei.value.field == "dataset.sha256" and "k2" in str(ei.value)
    profs = group_by_key([a, b, a])
    assert [p.key_sha256 for p in profs] == ["k1", "k2"] and len(profs[0].rows) == 2
    with pytest.raises(InputError):
        build_profile([])


def test_fmt_metric_shapes():
    assert fmt_metric(Metric(name="x", value=None, k=0, n=0)) == "no items"
    f1 = Metric(name="f1", value=0.5, k=2, n=4, lo=0.1, hi=0.9, counts={"tp": 1, "fp": 1, "fn": 1})
    assert fmt_metric(f1) == "0.500 (TP 1, FP 1, FN 1) [0.100, 0.900]"
    ba = Metric(name="ba", value=0.5, k=3, n=6, counts={"tp": 1, "n_pos": 2, "tn": 2, "n_neg": 4})
    assert fmt_metric(ba) == "0.500 (pos 1/2, neg 2/4)"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    quiet = RunSettings(progress=False, timeout_s=5)
    run_system(DS, KeywordToy(), root / "kw", settings=quiet, dataset_source={"name": "demo"})
    run_system(DS, KeywordToy(), root / "kw-C", settings=RunSettings(progress=False, tracks=["C"]),
               dataset_source={"name": "demo"})
    return root


def test_report_runs_rescores_folders(two_runs):
    rep = report_runs([two_runs / "kw", two_runs / "kw-C"])
    assert len(rep.profiles) == 1
    # two runs of one system are told apart by their folders
    assert [r.system for r in rep.profiles[0].rows] == ["keyword-toy (kw)", "keyword-toy (kw-C)"]
    only_c = rep.profiles[0].rows[1]
    assert only_c.cells["B"].status == "n/a" and only_c.cells["B"].reason == "not selected"
    assert only_c.cells["C"].status == "scored"
    # C numbers are the same in both runs (same system, same items)
    both_c = rep.profiles[0].rows[0].cells["C"].pair
    assert only_c.cells["C"].pair.model_dump() == both_c.model_dump()
    assert rep.data["profiles"][0]["key_sha256"] == "builtin"


def test_report_refuses_a_dataset_with_another_key(two_runs):
    other = DS.model_copy(update={"key_sha256": "different"})
    with pytest.raises(InputError) as ei:
        score_folder(two_runs / "kw", dataset=other)
    assert ei.value.field == "dataset.sha256"


def test_restrict_keeps_only_the_named_conversations():
    small = restrict(DS, ["demo-acme"])
    assert [c.id for c in small.conversations] == ["demo-acme"]
    assert all(d.conversation == "demo-acme" for d in small.drafts)
    assert restrict(DS, None) is DS


def test_runscores_round_trip():
    s = scores(Capabilities(recall=True, safety=True))
    assert RunScores.model_validate_json(s.model_dump_json()) == s


def test_export_and_rescore_predictions(two_runs, tmp_path):
    from twistbench.report.runs import export_predictions, report_predictions

    out = tmp_path / "preds.jsonl"
    n = export_predictions(two_runs / "kw", out)
    assert n == len(DS.drafts)
    rep = report_predictions(DS, out, system="kw-exported")
    row = rep.profiles[0].rows[0]
    direct = report_runs([two_runs / "kw"]).profiles[0].rows[0]
    assert row.cells["B"].pair == direct.cells["B"].pair
    assert row.cells["C"].status == "n/a" and "predictions" in row.cells["C"].reason


def test_plot_profile_writes_an_image(two_runs, tmp_path):
    from twistbench.report.plots import plot_profile

    prof = report_runs([two_runs / "kw", two_runs / "kw-C"]).profiles[0]
    out = plot_profile(prof, tmp_path / "profile.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_a_name_that_reads_as_mathtext_is_drawn_as_text(two_runs, tmp_path):
    import warnings

    from twistbench.report.plots import as_text, plot_profile

    # matplotlib reads '$...$' as math: this label raised ValueError (exit 3 from twist report)
    names = ["$\\nope{$", "bell\x07 $5"]
    prof = report_runs([two_runs / "kw", two_runs / "kw-C"], labels=names).profiles[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a control character would warn of a missing glyph
        out = plot_profile(prof, tmp_path / "profile.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert as_text(names[0]) == "\\$\\nope{\\$" and as_text(names[1]) == "bell\\x07 \\$5"


def test_terminal_profile_fits_80_columns_with_counts_and_grouped_na(two_runs):
    from twistbench.report.terminal import profile_lines

    rep = report_runs([two_runs / "kw", two_runs / "kw-C"])
    prof = rep.profiles[0]
    lines = [t.plain for t in profile_lines(prof, width=80)]
    assert all(len(ln) <= 80 for ln in lines), [ln for ln in lines if len(ln) > 80]
    c_pair = prof.rows[0].cells["C"].pair
    at = lines.index("C · current ↑ / stale ↓")
    row = lines[at + 1]
    assert row.startswith("  keyword-toy (kw) ") and f"{c_pair.primary.value:.2f}" in row
    assert f"{int(c_pair.primary.k)}/{c_pair.primary.n}" in row
    # the C-only run's four unselected columns are one line, not four
    na = [ln for ln in lines if ln.startswith("N/A ")]
    assert sum("not selected" in ln for ln in na) == 1
    assert "keyword-toy (kw-C) — not selected" in next(ln for ln in na if "not selected" in ln)
    # D is N/A for both rows (for different reasons): no block of its own
    assert not any(ln.startswith("D · ") for ln in lines)
    assert any(ln.startswith("N/A D: keyword-toy (kw) — system declares no safety") for ln in na)
    assert not any("report.md" in ln for ln in lines)  # nothing written, nothing named
    assert "report.md" in profile_lines(prof, 80, written=["out/report.md"])[-1].plain
    # wide enough: one line per system with every column side by side
    wide = [t.plain for t in profile_lines(prof, width=200)]
    assert sum(ln.startswith("keyword-toy") for ln in wide) == 2
