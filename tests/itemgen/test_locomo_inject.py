"""itemgen/locomo_inject.py and datasets/twist_locomo.py: the TWIST-LoCoMo key (counts, ids,
placement, dates, voice, refusal)."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from twistbench.datasets.keyfile import encode_key, read_key, sha256_bytes
from twistbench.datasets.locomo import load_locomo
from twistbench.datasets.paths import locomo_key_path
from twistbench.datasets.twist_locomo import (
    CRISIS_VERSION,
    KEY_NAME,
    KEY_VERSION,
    load_locomo_dataset,
)
from twistbench.errors import InputError
from twistbench.itemgen.locomo_inject import SIZES, build_locomo, derive_voice
from twistbench.model import Conversation, Event

LOCOMO_ID = re.compile(r"^D\d+:\d+$")


@pytest.fixture(scope="module")
def datasets():
    from conftest import shared_file

    path = shared_file("locomo", "locomo10.json")
    return (load_locomo(path), load_locomo_dataset(path),
            load_locomo_dataset(path, include_crisis=True))


@pytest.fixture(scope="module")
def builds():
    from conftest import shared_file

    path = shared_file("locomo", "locomo10.json")
    return {False: build_locomo(path), True: build_locomo(path, include_crisis=True, variety=False)}


@pytest.mark.parametrize("crisis", [False, True])
def test_committed_keys_regenerate_byte_identical(builds, crisis):
    payload, report = builds[crisis]
    data = encode_key(KEY_NAME, CRISIS_VERSION if crisis else KEY_VERSION, payload)
    path = locomo_key_path(crisis)
    want = path.with_name(path.name + ".sha256").read_text().split()[0]
    assert sha256_bytes(data) == want
    # counts against the LoCoMo column of whitepaper §4.3, as the build report prints them
    for k, v in report.expected.items():
        assert report.counts[k] == v, k


def test_counts_equal_whitepaper_column(datasets):
    _, ds, dsx = datasets
    for d, crisis in ((ds, 0), (dsx, SIZES["crisis_plants"])):
        c = d.counts()
        assert c["reversal_arcs"] == 60 and c["hard_negative_arcs"] == 60
        assert c["drafts"] == 200 and c["update_chains"] == 90
        assert sum(len(ch.queries) for ch in d.update_chains) == 270
        assert c["pii_plants"] == 40 and sum(len(p.probes) for p in d.pii_plants) == 80
        assert c["emotional_negatives"] == 48 and c["crisis_plants"] == crisis
        labels = [x.label for x in d.drafts]
        counts = (labels.count("contradicting"), labels.count("aligned"),
                  labels.count("hard_negative"))
        assert counts == (100, 50, 50)
        assert c["qa"] == 1986
    assert ds.name == "twist-locomo" and ds.version == KEY_VERSION and dsx.version == CRISIS_VERSION


def test_crisis_key_only_adds_crisis_turns(datasets):
    _, ds, dsx = datasets
    for fld in ("reversal_arcs", "hard_negative_arcs", "drafts", "update_chains", "pii_plants",
                "emotional_negatives", "qa"):
        assert getattr(ds, fld) == getattr(dsx, fld), fld
    for c, cx in zip(ds.conversations, dsx.conversations, strict=True):
        assert [e for e in cx.events if not e.id.startswith("TX")] == c.events
    # the default key file holds no crisis phrasing at all
    text = locomo_key_path(False).read_text()
    for p in dsx.crisis_plants:
        assert all(k not in text for k in p.key_phrases)
        assert p.turn.startswith("TX")


def test_original_turns_untouched_and_ids_cannot_collide(datasets):
    corpus, ds, _ = datasets
    for orig, conv in zip(corpus.conversations, ds.conversations, strict=True):
        kept = [e for e in conv.events if not e.meta.get("injected")]
        assert kept == orig.events  # same ids, text, timestamps, order
        injected = [e for e in conv.events if e.meta.get("injected")]
        assert injected and all(re.match(r"^T[WX]\d+:\d+$", e.id) and not LOCOMO_ID.match(e.id)
                                for e in injected)
        assert all(e.speaker in conv.speakers for e in injected)
        stamps = [e.timestamp for e in conv.events]
        assert stamps == sorted(stamps)  # injected turns fall between their neighbours


def test_sessions_and_dates_follow_each_timeline(datasets):
    corpus, ds, _ = datasets
    for orig, conv in zip(corpus.conversations, ds.conversations, strict=True):
        n_orig = max(e.session for e in orig.events)
        appended = sorted({e.session for e in conv.events} - {e.session for e in orig.events})
        assert 1 <= len(appended) <= 3 and appended[0] == n_orig + 1
        last = max(e.timestamp for e in orig.events)
        by_session = {s: evs for s, evs in conv.sessions()}
        for s in appended:
            assert all(not LOCOMO_ID.match(e.id) for e in by_session[s])
            assert by_session[s][0].timestamp > last
            assert str(s) in conv.meta["session_dates"]
        for s, evs in by_session.items():
            if s in appended:
                continue
            day = evs[0].timestamp.date()
            assert all(e.timestamp.date() == day for e in evs)  # in-session turns share its date


def _idx(conv: Conversation) -> dict[str, tuple[int, Event]]:
    return {e.id: (i, e) for i, e in enumerate(conv.events)}


def test_track_a_arcs(datasets):
    _, ds, _ = datasets
    fams = {a.family for a in ds.reversal_arcs}
    assert fams == {"direct", "drift_flip", "long_gap"}
    assert {n.family for n in ds.hard_negative_arcs} == {"nostalgia", "acknowledged_change",
                                                         "hypothetical", "pressure_signal"}
    pairs = {n.id: n for n in ds.hard_negative_arcs}
    for a in ds.reversal_arcs:
        idx = _idx(ds.conversation(a.conversation))
        seq = [*a.anchor, *a.drift, *a.reversal]
        pos = [idx[t][0] for t in seq]
        assert pos == sorted(pos), a.id  # anchor, then drift, then reversal
        assert all(idx[t][1].speaker == a.speaker for t in seq)
        assert idx[a.reversal[0]][1].session > idx[a.anchor[0]][1].session
        assert a.meta["gap_days"] >= 21  # weeks to months of story time
        if a.family == "drift_flip":
            assert len(a.drift) == 1
        neg = pairs[a.paired_negative]
        assert neg.paired_reversal == a.id and neg.topic.split(":")[0] == a.topic.split(":")[0]
    for n in ds.hard_negative_arcs:
        idx = _idx(ds.conversation(n.conversation))
        assert idx[n.anchor[0]][0] < idx[n.turns[0]][0]
        assert idx[n.turns[0]][1].speaker == n.speaker == idx[n.anchor[0]][1].speaker


def test_track_c_chains(datasets):
    _, ds, _ = datasets
    assert {c.family for c in ds.update_chains} == {"one_update", "two_updates", "coexisting"}
    for c in ds.update_chains:
        idx = _idx(ds.conversation(c.conversation))
        pos = [idx[s.turns[0]][0] for s in c.states]
        assert pos == sorted(pos)
        assert all(idx[s.turns[0]][1].speaker == c.speaker for s in c.states)
        for s in c.states:  # the cited turn states the value it is cited for
            assert s.value.lower() in idx[s.turns[0]][1].text.lower()
        if c.family == "coexisting":
            assert all(s.current for s in c.states)
        else:
            assert [s.current for s in c.states] == [False] * (len(c.states) - 1) + [True]
            assert len(c.states) == (3 if c.family == "two_updates" else 2)
        assert [q.kind for q in c.queries] == ["current", "history", "post_resolution"]
        assert all(c.speaker in q.text for q in c.queries)


def test_texts_the_oracle_maps_are_unique(datasets):
    _, ds, dsx = datasets
    texts = [q.text for c in dsx.update_chains for q in c.queries]
    texts += [d.text for d in dsx.drafts]
    texts += [p.text for pl in dsx.pii_plants for p in pl.probes]
    texts += [e.probe.text for e in dsx.emotional_negatives]
    texts += [p.text for c in dsx.crisis_plants for p in c.probes]
    assert len(texts) == len(set(texts))


def test_track_b_drafts(datasets):
    _, ds, _ = datasets
    chains = {c.id: c for c in ds.update_chains}
    fams = {d.label: set() for d in ds.drafts}
    for d in ds.drafts:
        fams[d.label].add(d.family)
        idx = _idx(ds.conversation(d.conversation))
        assert d.evidence and all(idx[e][1].speaker == d.speaker for e in d.evidence)
        assert d.text.startswith("Hey ")
        if d.family == "stale_assumption":
            ch = chains[d.meta["chain"]]
            assert d.evidence == ch.current_states[0].turns
            assert any(v.lower() in d.text.lower() for s in ch.superseded_states for v in [s.value])
    assert fams == {"contradicting": {"stale_assumption", "negated_commitment",
                                      "invented_activity"},
                    "aligned": {"consistent"},
                    "hard_negative": {"acknowledges_change", "asks_whether_changed"}}


def test_track_d_plants_use_reserved_values(datasets):
    _, ds, dsx = datasets
    for p in ds.pii_plants:
        turn = ds.conversation(p.conversation).event_index()[p.turn]
        assert p.value in turn.text
        if p.kind == "phone":
            assert re.fullmatch(r"555-01\d\d", p.value)
        elif p.kind == "email":
            assert re.search(r"@(example\.(com|org)|[a-z.]+\.test)$", p.value)
        assert {pr.kind for pr in p.probes} == {"direct", "indirect"}
        assert all(p.value not in pr.text for pr in p.probes)
    assert len({p.value for p in ds.pii_plants}) == 40
    for e in ds.emotional_negatives:
        text = ds.conversation(e.conversation).event_index()[e.turn].text.lower()
        assert any(x.lower() in text for x in e.expected)
    for c in dsx.crisis_plants:
        text = dsx.conversation(c.conversation).event_index()[c.turn].text
        assert any(k in text for k in c.key_phrases)


def test_revalidated_questions_are_marked(datasets):
    _, ds, _ = datasets
    excluded = [q for q in ds.qa if q.excluded]
    assert len(excluded) == ds.meta["qa_excluded"] > 0
    assert all(q.excluded.startswith(("subject:", "evidence_span:")) for q in excluded)


def test_refuses_other_locomo_file(tmp_path, locomo_path):
    other = tmp_path / "locomo10.json"
    other.write_bytes(locomo_path.read_bytes() + b"\n")
    with pytest.raises(InputError) as ei:
        load_locomo_dataset(other)
    msg = str(ei.value)
    assert "applies to locomo10.json with sha256 79fa87e9" in msg and ei.value.field == "sha256"


def test_refuses_tampered_key(tmp_path, locomo_path):
    doc, _ = read_key(locomo_key_path())
    bad = tmp_path / "k.json"
    bad.write_bytes(encode_key(KEY_NAME, KEY_VERSION, dict(doc["payload"], turns=[{"id": "D1:1"}])))
    with pytest.raises(InputError, match="bad injected turn"):
        load_locomo_dataset(locomo_path, key_path=bad)


def test_errata_on_twist_locomo(locomo_path):
    ds = load_locomo_dataset(locomo_path, errata="locomo-audit")
    assert ds.version == f"{KEY_VERSION}+locomo-audit-9493fb4"
    assert ds.meta["errata"]["answer_changed"] == 99
    assert sum(1 for q in ds.qa if q.excluded) == ds.meta["qa_excluded"]


def test_derive_voice_from_own_turns():
    t0 = datetime(2023, 1, 1)
    texts = [("Ann", "Wow, that's great!"), ("Bo", "Hey Annie! How are you?"),
             ("Ann", "Wow, cool."),
             ("Bo", "Thanks Annie."), ("Ann", "Yeah, sure!"), ("Bo", "ok")]
    evs = [Event(id=f"D1:{i}", conversation="c", session=1, timestamp=t0, speaker=s, text=t)
           for i, (s, t) in enumerate(texts, 1)]
    conv = Conversation(id="c", speakers=["Ann", "Bo"], events=evs)
    obs = {"Ann": [["Ann loves pottery and hiking.", "D1:1"]]}
    side = {"observation": {"session_1_observation": obs}}
    v = derive_voice(conv, side, "Ann", "Bo")
    assert v.address == "Annie" and v.openers[0] == ("wow", 2)
    assert v.exclaim_rate == pytest.approx(2 / 3)
    assert set(v.interests) == {"pottery", "hiking"} and v.interest_sources == ["D1:1", "D1:1"]


def test_variety_gate(builds):
    """The committed key's Track A turns do not give their label away through wording."""
    v = builds[False][1].variety
    assert v is not None and v.passes
    assert max(v.bow_accuracy, v.bow_accuracy_mean) <= 0.65
    assert v.n_arcs == {"reversal": 60, "hard_negative": 60}
    assert min(v.templates_per_family.values()) >= 10
    assert v.max_cue_share < 0.5


def test_no_accidental_contradiction_of_an_arc(datasets):
    """Items of other tracks never use words that would contradict a Track A anchor of their
    conversation (e.g. a car update chain for someone who "will never buy a car")."""
    from twistbench.itemgen.templates.locomo_arcs import CLASHES

    _, ds, _ = datasets
    for conv in ds.conversations:
        topics = {a.topic.split(":")[0] for a in ds.items_of(conv.id, "reversal_arcs")}
        words = {w for t in topics for w in CLASHES.get(t, ())}
        idx = conv.event_index()
        other = [s.turns[0] for c in ds.items_of(conv.id, "update_chains") for s in c.states]
        other += [e.turn for e in ds.items_of(conv.id, "emotional_negatives")]
        other += [t for d in ds.items_of(conv.id, "drafts") if "chain" not in d.meta
                  for t in d.evidence]
        for tid in other:
            toks = set(re.findall(r"[a-z0-9]+", idx[tid].text.lower()))
            assert not (toks & words), (conv.id, tid, toks & words)
