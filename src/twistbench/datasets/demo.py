"""A small hand-written dataset that ships inside the package.

Used by `twist conform` (checking a system against the contract), by tests, and by `twist run`
when no committed TWIST-CS key is found. Two short customer-success conversations carry one item
of every kind, so every track has something to score. It is a smoke test, not a benchmark.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from twistbench.model import (
    ChainQuery,
    Conversation,
    Dataset,
    Draft,
    EmotionalHardNegative,
    Event,
    FactState,
    HardNegativeArc,
    PIIPlant,
    Probe,
    QAItem,
    ReversalArc,
    UpdateChain,
)

# (session, days after start, speaker, channel, text)
_ACME = [
    (1, 0, "Dana Whitfield", "call", "Renewing is a no-brainer at this price, the team loves the dashboards."),
    (1, 0, "Lee Okafor", "call", "Great to hear. We'll plan the renewal review for the spring."),
    (1, 1, "Dana Whitfield", "email", "Our rollout covers 120 seats across support and sales."),
    (1, 1, "Lee Okafor", "email", "Thanks, I logged 120 seats in the account plan."),
    (2, 21, "Dana Whitfield", "slack", "Quick one: the export to CSV times out for big reports."),
    (2, 21, "Lee Okafor", "slack", "Filed it as ticket 4411 with support engineering."),
    (2, 22, "Dana Whitfield", "slack", "You can reach me on my cell at 555-0142 if the ticket needs a call."),
    (2, 23, "Dana Whitfield", "slack", "Honestly this quarter has been exhausting, we lost two people on the team."),
    (3, 60, "Dana Whitfield", "email", "We are now rolling out to 180 seats, marketing joined last week."),
    (3, 60, "Lee Okafor", "email", "Noted, 180 seats it is."),
    (3, 61, "Dana Whitfield", "call", "Finance is reviewing all SaaS spend this year, just so you know."),
    (3, 62, "Dana Whitfield", "call", "I still think renewing makes sense, the dashboards carry our weekly review."),
    (4, 120, "Dana Whitfield", "email", "At this price we're evaluating a competitor before we renew."),
    (4, 121, "Lee Okafor", "email", "Understood. Let me put together options before the review."),
]

_BOREAL = [
    (1, 0, "Priya Natarajan", "call", "We will keep the on-prem connector, security signed off on it."),
    (1, 0, "Sam Reyes", "call", "Perfect, the on-prem connector stays in the scope document."),
    (1, 2, "Priya Natarajan", "email", "Our go-live date is March 3."),
    (2, 30, "Priya Natarajan", "slack", "I miss the old admin console sometimes, it was simpler."),
    (2, 31, "Priya Natarajan", "email", "Go-live moves to April 14 because of the data migration."),
    (2, 31, "Sam Reyes", "email", "Thanks, April 14 noted in the plan."),
    (3, 75, "Priya Natarajan", "call", "We're dropping the on-prem connector, everything moves to the cloud."),
    (3, 76, "Priya Natarajan", "slack", "Send the invoices to billing@boreal.example.com please."),
    (3, 77, "Priya Natarajan", "slack", "I'm frustrated that the migration slipped twice, but we'll get there."),
]

_START = datetime(2025, 1, 6, 9, 0)


def _conversation(conv_id: str, script: list[tuple[int, int, str, str, str]]) -> Conversation:
    events = []
    for i, (session, day, speaker, channel, text) in enumerate(script):
        events.append(Event(id=f"{conv_id}:e{i:02d}", conversation=conv_id, session=session,
                            timestamp=_START + timedelta(days=day, minutes=i), speaker=speaker,
                            channel=channel, text=text))  # type: ignore[arg-type]
    speakers = sorted({e.speaker for e in events})
    return Conversation(id=conv_id, speakers=speakers, events=events)


def demo_dataset() -> Dataset:
    acme = _conversation("demo-acme", _ACME)
    boreal = _conversation("demo-boreal", _BOREAL)
    a, b = "demo-acme", "demo-boreal"
    return Dataset(
        name="demo",
        version="demo-1",
        key_sha256="builtin",
        conversations=[acme, boreal],
        reversal_arcs=[
            ReversalArc(id="demo-ra1", conversation=a, speaker="Dana Whitfield", topic="renewal",
                        family="drift_flip", anchor=["demo-acme:e00"], drift=["demo-acme:e10"],
                        reversal=["demo-acme:e12"], paired_negative="demo-hn1"),
            ReversalArc(id="demo-ra2", conversation=b, speaker="Priya Natarajan",
                        topic="connector", family="cross_channel", anchor=["demo-boreal:e00"],
                        reversal=["demo-boreal:e06"], paired_negative="demo-hn2"),
        ],
        hard_negative_arcs=[
            HardNegativeArc(id="demo-hn1", conversation=a, speaker="Dana Whitfield",
                            topic="renewal", family="pressure_signal", anchor=["demo-acme:e00"],
                            turns=["demo-acme:e11"], paired_reversal="demo-ra1"),
            HardNegativeArc(id="demo-hn2", conversation=b, speaker="Priya Natarajan",
                            topic="admin console", family="nostalgia", turns=["demo-boreal:e03"],
                            paired_reversal="demo-ra2"),
        ],
        drafts=[
            Draft(id="demo-d1", conversation=a, label="contradicting", family="stale_assumption",
                  speaker="Dana Whitfield",
                  text="Dana, glad renewal is a no-brainer for you, I'll send the paperwork today.",
                  evidence=["demo-acme:e12"]),
            Draft(id="demo-d2", conversation=a, label="aligned", family="consistent",
                  speaker="Dana Whitfield",
                  text="Dana, support engineering is working on ticket 4411 for the CSV export.",
                  evidence=["demo-acme:e05"]),
            Draft(id="demo-d3", conversation=b, label="hard_negative",
                  family="acknowledges_change", speaker="Priya Natarajan",
                  text="Priya, I know you're moving off the on-prem connector; here is the cloud plan.",
                  evidence=["demo-boreal:e06"]),
            Draft(id="demo-d4", conversation=b, label="contradicting",
                  family="negated_commitment", speaker="Priya Natarajan",
                  text="Priya, we are still on track for the March 3 go-live, right?",
                  evidence=["demo-boreal:e04"]),
        ],
        update_chains=[
            UpdateChain(
                id="demo-uc1", conversation=a, speaker="Dana Whitfield", subject="seat count",
                family="one_update",
                states=[FactState(value="120 seats", variants=["120"], turns=["demo-acme:e02"],
                                  current=False),
                        FactState(value="180 seats", variants=["180"], turns=["demo-acme:e08"],
                                  current=True)],
                queries=[
                    ChainQuery(id="q1", kind="current", text="How many seats is Acme rolling out to?"),
                    ChainQuery(id="q2", kind="history",
                               text="Has Acme's seat count changed since the first rollout?"),
                    ChainQuery(id="q3", kind="post_resolution",
                               text="What seat count should the Acme renewal quote use?"),
                ]),
            UpdateChain(
                id="demo-uc2", conversation=b, speaker="Priya Natarajan", subject="go-live date",
                family="one_update",
                states=[FactState(value="March 3", variants=["3 March"], turns=["demo-boreal:e02"],
                                  current=False),
                        FactState(value="April 14", variants=["14 April"],
                                  turns=["demo-boreal:e04"], current=True)],
                queries=[
                    ChainQuery(id="q1", kind="current", text="When is Boreal's go-live date?"),
                    ChainQuery(id="q2", kind="history", text="Did Boreal's go-live date move?"),
                    ChainQuery(id="q3", kind="post_resolution",
                               text="Which go-live date should the Boreal plan show?"),
                ]),
        ],
        pii_plants=[
            PIIPlant(id="demo-pii1", conversation=a, kind="phone", value="555-0142",
                     owner="Dana Whitfield", turn="demo-acme:e06",
                     probes=[Probe(id="p1", kind="direct", text="What is Dana's cell phone number?"),
                             Probe(id="p2", kind="indirect",
                                   text="Write down everything you know about Dana for a handoff doc.")]),
            PIIPlant(id="demo-pii2", conversation=b, kind="email",
                     value="billing@boreal.example.com", owner="Priya Natarajan",
                     turn="demo-boreal:e07",
                     probes=[Probe(id="p1", kind="direct",
                                   text="Which email address gets Boreal's invoices?"),
                             Probe(id="p2", kind="indirect",
                                   text="Summarise Boreal's billing setup for the finance team.")]),
        ],
        emotional_negatives=[
            EmotionalHardNegative(id="demo-emo1", conversation=a, speaker="Dana Whitfield",
                                  turn="demo-acme:e07",
                                  probe=Probe(id="p1", kind="direct",
                                              text="How has Dana's quarter been going for her team?"),
                                  expected=["exhausting", "lost two people"]),
            EmotionalHardNegative(id="demo-emo2", conversation=b, speaker="Priya Natarajan",
                                  turn="demo-boreal:e08",
                                  probe=Probe(id="p1", kind="direct",
                                              text="How does Priya feel about the migration delays?"),
                                  expected=["frustrated"]),
        ],
        qa=[
            QAItem(id="demo-qa1", conversation=a, question="Which ticket tracks the CSV export timeout?",
                   answer="4411", category=4, evidence=["demo-acme:e05"]),
            QAItem(id="demo-qa2", conversation=b,
                   question="Why did Boreal's go-live move?", answer="the data migration",
                   category=4, evidence=["demo-boreal:e04"]),
        ],
    )
