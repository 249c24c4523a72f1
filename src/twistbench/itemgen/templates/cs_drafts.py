"""Track B record scenarios: one record turn by a customer person, one outgoing draft.

Each scenario has two record variants and one draft, so the same draft is contradicting under
one variant and aligned under the other (minimal pairs: the draft's wording gives nothing away).
- EVENT scenarios: `done` says the activity happened, `not_done` says it did not; the draft
  thanks the customer for it. not_done -> contradicting (invented_activity); done -> aligned.
- COMMITMENT scenarios: `commit` states a commitment, `decline` declines it; the draft assumes
  the decline. commit -> contradicting (negated_commitment); decline -> aligned.
Stale-assumption drafts and their hard negatives come from cs_chains.SUBJECTS.
Slots: {first} (draft addressee) {day} {team} {feature} {integration} {month} {company}.
Each scenario has a `key` slot naming what makes an instance distinct within a workspace.
"""

from __future__ import annotations

EVENT_SCENARIOS: dict[str, dict[str, object]] = {
    "training": {
        "key": "team",
        "done": ("The {team} team finished the admin training on {day}, great session.",
                 "We got through the admin training with the {team} team on {day}; everyone attended."),
        "not_done": ("We had to cancel {day}'s admin training for the {team} team; half of them are out sick.",
                     "The admin training for the {team} team on {day} didn't happen, we called it off that morning."),
        "draft": "Hi {first}, thanks for having the {team} team join the admin training on {day}. Slides and the recording are attached.",
    },
    "exec_demo": {
        "key": "feature",
        "done": ("Our COO sat in on the {feature} demo on {day} and liked what she saw.",
                 "The {feature} demo for our COO happened on {day} as planned."),
        "not_done": ("Our COO couldn't make the {feature} demo on {day}; we'll need to reschedule.",
                     "The {feature} demo on {day} got cancelled, our COO was pulled into a board call."),
        "draft": "Hi {first}, glad your COO could see the {feature} demo on {day}. Let me know what questions came up.",
    },
    "survey": {
        "key": "team",
        "done": ("We sent the user survey to the {team} team on {day}.",
                 "The {team} team got the user survey on {day}, responses are coming in."),
        "not_done": ("We haven't sent the user survey to the {team} team yet; it's stuck with comms.",
                     "The user survey for the {team} team is still on hold, nothing has gone out."),
        "draft": "Hi {first}, thanks for sending the user survey to the {team} team on {day}; I'll start on the analysis once responses close.",
    },
    "import": {
        "key": "integration",
        "done": ("The {integration} import finished on {day} without errors.",
                 "We completed the {integration} data import on {day}."),
        "not_done": ("We haven't started the {integration} import yet; IT is still waiting on credentials.",
                     "The {integration} import is still blocked, nothing has been loaded."),
        "draft": "Hi {first}, great to see the {integration} import completed on {day}! Next step is validating the row counts.",
    },
    "order_form": {
        "key": "month",
        "done": ("I sent the {month} order form to legal on {day}.",
                 "Legal has the {month} order form since {day}."),
        "not_done": ("The {month} order form hasn't gone to legal yet; I'm still waiting on budget sign-off.",
                     "I'm holding the {month} order form, it hasn't been sent to legal."),
        "draft": "Hi {first}, thanks for getting the {month} order form over to legal on {day}. Any redlines yet?",
    },
    "kickoff": {
        "key": "team",
        "done": ("We held the internal kickoff for the {team} rollout on {day}.",
                 "The {team} rollout kickoff went ahead on {day} with all the leads."),
        "not_done": ("The internal kickoff for the {team} rollout was postponed; no new date yet.",
                     "We didn't hold the {team} rollout kickoff on {day}, it's pushed indefinitely."),
        "draft": "Hi {first}, congrats on holding the {team} rollout kickoff on {day}. I've attached the launch checklist.",
    },
    "workshop": {
        "key": "team",
        "done": ("The {team} team ran the dashboard workshop on {day} and built three new boards.",
                 "We did the dashboard workshop with the {team} team on {day}, it went well."),
        "not_done": ("We skipped the dashboard workshop on {day}; the {team} team was buried in month-end.",
                     "The {team} team never made it to the dashboard workshop on {day}."),
        "draft": "Hi {first}, I heard the {team} team's dashboard workshop on {day} went well. Want me to review the boards they built?",
    },
    "sandbox_test": {
        "key": "feature",
        "done": ("We tested {feature} in the sandbox on {day}; it worked as expected.",
                 "Testing of {feature} in the sandbox wrapped up on {day}, no issues."),
        "not_done": ("We never got to test {feature} in the sandbox; the team didn't have time.",
                     "Nobody has tested {feature} in the sandbox yet, it's still on the list."),
        "draft": "Hi {first}, thanks for testing {feature} in the sandbox on {day}. Ready to turn it on in production?",
    },
    "data_review": {
        "key": "integration",
        "done": ("Our analysts signed off on the {integration} field mapping on {day}.",
                 "The {integration} field mapping was approved by our analysts on {day}."),
        "not_done": ("Our analysts haven't reviewed the {integration} field mapping; it's still in their queue.",
                     "The {integration} field mapping is not signed off, our analysts found gaps."),
        "draft": "Hi {first}, great that your analysts signed off on the {integration} field mapping on {day}. We'll start the backfill.",
    },
}

COMMITMENT_SCENARIOS: dict[str, dict[str, object]] = {
    "connector": {
        "key": "integration",
        "commit": ("We'll need the {integration} connector live before launch, no question.",
                   "The {integration} connector has to be working on launch day."),
        "decline": ("We won't need the {integration} connector for launch; it can wait.",
                    "The {integration} connector isn't needed at launch, later is fine."),
        "draft": "Hi {first}, as agreed, the {integration} connector isn't needed for launch, so we'll schedule it for after go-live.",
    },
    "summit": {
        "key": "month",
        "commit": ("I'll definitely attend the customer summit in {month}.",
                   "Count me in for the customer summit in {month}, I've booked travel."),
        "decline": ("I won't be able to attend the customer summit in {month}.",
                    "I have to skip the customer summit in {month}, sorry."),
        "draft": "Hi {first}, sorry you can't make the customer summit in {month}. I'll send you the recordings afterwards.",
    },
    "history_extract": {
        "key": "integration",
        "commit": ("We'll send the historical {integration} extract by {day}, all five years.",
                   "You'll get the full historical {integration} extract from us by {day}."),
        "decline": ("We won't be sending a historical {integration} extract; start from this year's data.",
                    "No historical {integration} extract is coming, this year's data only."),
        "draft": "Hi {first}, since you're not sending the historical {integration} extract, we'll start the model from this year's data.",
    },
    "beta": {
        "key": "feature",
        "commit": ("Count us in for the {feature} beta.",
                   "We want to be in the {feature} beta, please sign us up."),
        "decline": ("We'll pass on the {feature} beta this time.",
                    "Leave us out of the {feature} beta, we don't have capacity."),
        "draft": "Hi {first}, noted that you're sitting out the {feature} beta; I'll let you know when it's generally available.",
    },
    "weekly_call": {
        "key": "team",
        "commit": ("Let's keep the weekly call with the {team} team going through launch.",
                   "The weekly call with the {team} team has to continue until launch."),
        "decline": ("We can drop the weekly call with the {team} team until launch; email is enough.",
                    "Pause the weekly call with the {team} team, we'll use email until launch."),
        "draft": "Hi {first}, as agreed we'll pause the weekly call with the {team} team until launch and keep things on email.",
    },
    "sandbox_keep": {
        "key": "month",
        "commit": ("Please keep our sandbox environment open through {month}.",
                   "We still need the sandbox environment until the end of {month}."),
        "decline": ("You can shut down our sandbox environment; we're done with it.",
                    "No need to keep the sandbox environment, go ahead and remove it."),
        "draft": "Hi {first}, as requested we'll decommission your sandbox environment this week, ahead of {month}.",
    },
    "cfo_meeting": {
        "key": "month",
        "commit": ("Our CFO wants to meet your leadership before the {month} renewal.",
                   "Please set up a meeting between our CFO and your leadership before {month}."),
        "decline": ("Our CFO doesn't need a meeting with your leadership before {month}.",
                    "No leadership meeting needed for our CFO this cycle, {month} or otherwise."),
        "draft": "Hi {first}, since your CFO doesn't need a leadership meeting before {month}, we'll keep the renewal conversation with you.",
    },
    "onsite": {
        "key": "team",
        "commit": ("We'd like the {team} workshop onsite at our office.",
                   "The {team} workshop should be in person at our office."),
        "decline": ("No need to come onsite for the {team} workshop; remote is fine.",
                    "Let's do the {team} workshop remotely, no travel needed."),
        "draft": "Hi {first}, as discussed we'll run the {team} workshop remotely rather than onsite.",
    },
    "uat_signoff": {
        "key": "feature",
        "commit": ("We'll run full user acceptance testing on {feature} before it goes live.",
                   "{feature} has to go through our UAT before anyone uses it."),
        "decline": ("We'll skip user acceptance testing on {feature}; just switch it on.",
                    "No UAT needed for {feature}, go ahead and enable it."),
        "draft": "Hi {first}, since you're skipping UAT on {feature}, we'll switch it on for everyone on Monday.",
    },
}
