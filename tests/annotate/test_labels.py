"""How the key's gold maps onto the annotators' answers, per track."""

from __future__ import annotations

from datetime import datetime

from twistbench.annotate.excerpts import Record, Settings, item_view, render_view
from twistbench.annotate.labels import (
    C_TAIL,
    c_values,
    choices_for,
    family_of,
    gold_category,
)
from twistbench.annotate.packet import annotation_units
from twistbench.datasets.demo import demo_dataset
from twistbench.model import (
    ChainQuery,
    Conversation,
    EmotionalHardNegative,
    Event,
    FactState,
    Probe,
    UpdateChain,
)


def _chain(currents: list[bool], values=("Tuesday", "Monday", "Friday")) -> UpdateChain:
    states = [FactState(value=v, turns=[f"t{i}"], current=c)
              for i, (v, c) in enumerate(zip(values, currents))]
    return UpdateChain(id="c1", conversation="x", speaker="A", family="f", states=states,
                       queries=[ChainQuery(id="q", kind="current", text="Which day now?")])


def test_track_c_answers_are_values_in_alphabetical_order():
    chain = _chain([False, False, True])
    assert c_values(chain) == [("v1", "Friday"), ("v2", "Monday"), ("v3", "Tuesday")]
    choices, cats = choices_for(chain)
    assert [c.code for c in choices] == ["v1", "v2", "v3", *(c.code for c in C_TAIL)]
    assert cats == {"v1": "latest", "v2": "earlier_2", "v3": "earlier_1", "all": "all",
                    "other": "other", "cannot_tell": "cannot_tell"}
    assert gold_category(chain) == "latest"
    assert gold_category(_chain([True, True], values=("A", "B"))) == "all"
    assert gold_category(_chain([True, False, True])) == "other"
    assert gold_category(_chain([True, False], values=("A", "B"))) == "earlier_1"


def test_every_demo_item_has_an_answer_among_its_choices():
    ds = demo_dataset()
    units = annotation_units(ds, ["A", "B", "C", "D"], Settings())
    assert len(units) == sum(len(getattr(ds, f)) for f in (
        "reversal_arcs", "hard_negative_arcs", "drafts", "update_chains", "pii_plants",
        "emotional_negatives", "crisis_plants"))
    for u in units:
        assert u.gold in u.view.choice_categories.values(), u.item_id
        text = render_view(u.view)
        assert u.item_id not in text and u.view.question in text
    # a hard negative without an earlier statement is shown with its pair's anchor
    hn = next(h for h in ds.hard_negative_arcs if not h.anchor)
    pair = next(a for a in ds.reversal_arcs if a.id == hn.paired_reversal)
    view = next(u.view for u in units if u.item_id == hn.id)
    pos = {e.id: i + 1 for i, e in enumerate(ds.conversation(hn.conversation).events)}
    marks = {t.n: t.mark for ex in view.excerpts for t in ex.turns}
    assert marks[pos[pair.anchor[0]]] == "1" and marks[pos[hn.turns[0]]] == "2"


def test_business_contacts_are_recall_controls_and_families_come_from_meta():
    conv = Conversation(id="x", speakers=["A"], events=[
        Event(id="x:1", conversation="x", session=1, timestamp=datetime(2025, 1, 1),
              speaker="A", text="Our support line is +1 (202) 555-0100.")])
    bc = EmotionalHardNegative(id="x:emo-1", conversation="x", speaker="A", turn="x:1",
                               probe=Probe(id="p", kind="direct", text="What is the line?"),
                               expected=["+1 (202) 555-0100"],
                               meta={"family": "business_contact"})
    assert gold_category(bc) == "work_contact" and family_of(bc) == "D/business_contact"
    plain = bc.model_copy(update={"meta": {}})
    assert gold_category(plain) == "feeling" and family_of(plain) == "D/emotional"
    view = item_view(bc, conv, record=Record(conv))
    assert "The detail: +1 (202) 555-0100" in view.lead
    assert "What is the line?" not in render_view(view)  # the key's probe is not shown
