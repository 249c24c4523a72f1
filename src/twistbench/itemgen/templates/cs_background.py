"""Background work traffic: onboarding, tickets, feature requests, scheduling, business reviews.

A thread is a list of (speaker spec, text). Speaker specs: "C1", "C2" = customer people (C1 and C2
differ), "V1", "V2" = vendor people; a role may be forced with "C1:admin" or "V1:support_eng".
Slots: {report} {error} {feature} {integration} {team} {day} {time} {n} {n4} {month} {C1} {C2}
{V1} {V2} (first names) {company} {vendor} {product} {action}.
None of these take a stance on anything Track A-D items are about.
"""

from __future__ import annotations

SLACK_THREADS: list[list[tuple[str, str]]] = [
    [("C1", "{report} is showing {error} when I open it this morning. Anyone else seeing that?"),
     ("V1:support_eng", "Thanks {C1}, looking now. Roughly when did you first notice it?"),
     ("C1", "Around {time}. It was fine yesterday afternoon."),
     ("V1:support_eng", "Found it: a sync job stalled overnight. I've restarted it, should be back within the hour."),
     ("C1", "Confirmed, it's loading again. Thanks!")],
    [("C1", "Feature request from the {team} team: could {feature} support filtering by region?"),
     ("V1:csm", "Good idea. I'll log it with product and share the ticket number."),
     ("V1:csm", "Logged as FR-{n4}. I'll update you when it's been reviewed.")],
    [("V1:csm", "Can we move our weekly sync to {day} at {time}? I have a conflict in the usual slot."),
     ("C1", "{day} works for me."),
     ("C2", "Same here, see you then.")],
    [("C1:end_user", "How do I share a dashboard with someone outside the {team} team?"),
     ("V1", "Open the dashboard, click Share, and add them by email. They'll need a viewer seat."),
     ("C1:end_user", "Perfect, thanks.")],
    [("V1", "Heads up: this week's release adds {feature} improvements and a faster CSV export. Notes are in the help centre."),
     ("C1", "Nice, we'll try it out.")],
    [("C1", "Is there a limit on how many rows we can export from {report}?"),
     ("V1:solutions_eng", "The default cap is {n}k rows per export; scheduled exports can go higher."),
     ("C1", "Good to know, thanks.")],
    [("C1:end_user", "Can someone give me editor access to {report}?"),
     ("C2:admin", "Done. Refresh and you should see the edit button."),
     ("C1:end_user", "Got it, thanks!")],
    [("C1:admin", "The {integration} sync took longer than usual last night, about {n} minutes."),
     ("V1:support_eng", "We saw a spike in API latency on the {integration} side around then. It's back to normal now."),
     ("C1:admin", "Okay, I'll keep an eye on tonight's run.")],
    [("C1", "Why does {report} show different totals than our spreadsheet?"),
     ("V1:solutions_eng", "Usually it's time zones: the report uses UTC. Happy to show you how to switch it to local time."),
     ("C1", "That was it. Thanks!")],
    [("V1", "We're running a webinar on {feature} on {day} at {time}. Want me to send invites to the {team} team?"),
     ("C1", "Yes please, send them over.")],
    [("C1", "I'm out from {day} through next week; {C2} is covering for me."),
     ("V1", "Thanks for the heads-up, enjoy the time off.")],
    [("V1:support_eng", "Following up on the {error} ticket from last week: the fix shipped this morning."),
     ("C1", "Great, we'll keep an eye on it.")],
    [("C1", "Does anyone have a good template for a {team} KPI dashboard?"),
     ("V1", "There's one in the template gallery, search for '{team} overview'."),
     ("C2", "We used that one, it's a good starting point.")],
    [("V1", "Planned maintenance on {day} from {time} UTC for about 30 minutes. Dashboards stay readable; edits are paused."),
     ("C1", "Noted, I'll let the team know.")],
    [("C1", "Shout-out to {V1} for the quick help with {report} yesterday!"),
     ("V1", "Happy to help!")],
    [("C1:admin", "If we remove someone from the {team} group, do their saved reports get deleted?"),
     ("V1", "No, ownership transfers to the workspace admin. Nothing is lost."),
     ("C1:admin", "Perfect.")],
    [("V1:csm", "Notes from today's sync are in the shared doc. Action items: {action}."),
     ("C1", "Thanks, I'll take the first one.")],
    [("C1", "Quick sanity check: is an 'active user' anyone who logged in within 30 days?"),
     ("V1", "Yes, 30 days, counting any login or scheduled report open.")],
    [("C1:end_user", "The filter on {report} resets every time I switch tabs. Is that expected?"),
     ("V1:support_eng", "Not expected. Could you send a screenshot of the filter panel?"),
     ("C1:end_user", "Sent in DM."),
     ("V1:support_eng", "Thanks, reproduced it. Ticket #{n4} is open and I'll update you here.")],
    [("C1", "Can we get the {team} team added to the shared channel?"),
     ("V1:csm", "Sure, send me their emails and I'll invite them today.")],
    [("V1:solutions_eng", "I put together a sample query for {report} that joins the {integration} data. Want me to share it?"),
     ("C1", "Yes, that would save us a lot of time."),
     ("V1:solutions_eng", "Shared in the docs folder.")],
    [("C1:end_user", "Is the mobile view of {report} supposed to hide the totals row?"),
     ("V1", "Yes, on small screens totals collapse; tap the table header to expand them.")],
    [("C1", "Morning all, the {team} team is asking whether we can schedule {report} to land at {time}."),
     ("V1", "Yes: Schedule, then Daily, then pick {time}. It'll email a PDF to whoever you add."),
     ("C1", "Done, thanks!")],
    [("V1:csm", "Reminder that the community office hours are on {day} at {time}. Bring any questions."),
     ("C2", "I'll try to join.")],
]

EMAIL_THREADS: list[tuple[str, list[tuple[str, str]]]] = [
    ("QBR scheduling for {month}",
     [("V1:csm", "Would {day} work for our quarterly business review? I'll bring usage trends and a roadmap preview."),
      ("C1", "{day} works. I'll invite {C2} as well.")]),
    ("Invoice {n4} for {month}",
     [("V1:ae", "Please find attached invoice {n4} for {month}. Let me know if your AP team needs anything else."),
      ("C1:economic_buyer", "Received, forwarded to accounts payable.")]),
    ("Training invite: {feature} basics",
     [("V1", "We're hosting a 45-minute session on {feature} basics on {day} at {time}. Feel free to forward to the {team} team.")]),
    ("{vendor} product update for {month}",
     [("V1:csm", "Here's a quick summary of this month's release: faster dashboards, improvements to {feature}, and a new {integration} setting. Full notes are in the help centre.")]),
    ("Ticket {n4}: {error} on {report}",
     [("V1:support_eng", "Summary of ticket {n4}: the {error} on {report} was caused by a cache that didn't refresh. We've fixed it and added monitoring."),
      ("C1", "Thanks for the clear write-up.")]),
    ("Vendor form update",
     [("C1:economic_buyer", "Our procurement team asked for an updated vendor information form. Could you send one over by {day}?"),
      ("V1:ae", "Attached. Let me know if anything is missing.")]),
    ("Welcome {V2} to the account team",
     [("V1:csm", "I'd like to introduce {V2}, who will support your technical questions going forward."),
      ("C1", "Welcome {V2}! Looking forward to working together.")]),
    ("User survey results",
     [("V1:csm", "The results of the satisfaction survey are attached: most of the {team} team rated report speed as the top improvement."),
      ("C1", "Interesting, let's discuss on our next call.")]),
    ("Office hours this {day}",
     [("V1", "Our solutions engineers are holding open office hours this {day} at {time}. No agenda needed.")]),
    ("Beta invitation: {feature}",
     [("V1:csm", "We're opening an early look at the next version of {feature}. Reply if you'd like a walkthrough.")]),
    ("Follow-up from the {feature} webinar",
     [("V1", "Thanks to everyone from {company} who joined the webinar. The recording and slides are linked here."),
      ("C2", "Thanks, sharing with the {team} team.")]),
    ("Dashboard review for the {team} team",
     [("C1", "Could your team review the {team} dashboards before we share them with leadership on {day}?"),
      ("V1:solutions_eng", "Happy to. I'll leave comments in the doc by {day} morning."),
      ("C1", "Much appreciated.")]),
    ("Agenda for {day}'s sync",
     [("V1:csm", "Proposed agenda: open tickets, {feature} questions, and the {team} team's dashboard requests. Anything to add?"),
      ("C1", "Let's also cover the {integration} sync timing.")]),
    ("Holiday support hours",
     [("V1:support_eng", "A reminder that support hours change over the holidays in {month}. Urgent tickets are still covered around the clock.")]),
]

CALL_OPENINGS = [
    ("V1:csm", "Thanks for joining, everyone. Shall we start with updates from your side?"),
    ("V1:csm", "Okay, I think we have everyone. Let's dive in."),
    ("V1", "Morning all, thanks for making the time. I've got a short agenda today."),
    ("V1:csm", "Hi everyone. Let's keep this to thirty minutes, I know {C1} has a hard stop."),
]

# Call exchanges: each is a short sequence that makes sense on its own; a call samples several.
CALL_EXCHANGES = [
    [("C1", "Adoption in the {team} team is steady; about {n} people logged in last week."),
     ("V1", "Good to hear. Anything blocking the rest of the team?"),
     ("C1", "Not really, just the usual month-end crunch.")],
    [("C1", "We finished rebuilding {report}, and people seem happier with it."),
     ("V1", "Nice work. Want me to share it in the template gallery?")],
    [("C2", "The {integration} sync has been stable since the last fix."),
     ("V2", "Great, we'll keep the extra monitoring on for another week.")],
    [("C1", "We had a couple of questions about {feature}, mostly around permissions."),
     ("V1", "The easiest way in is to start from a template; I'll send over the documentation after the call.")],
    [("C2", "One thing from the {team} team: they'd like {report} to refresh earlier in the morning."),
     ("V2", "That's a setting on the schedule; I can change it for you today.")],
    [("C1", "Can you remind me where the usage report lives?"),
     ("V1", "Under Admin, then Usage. You can filter it by team.")],
    [("C2", "We're also seeing {error} now and then on {report}."),
     ("V2", "Could you file a ticket with a screenshot? Then support can trace it.")],
    [("V1", "On our side, the next release lands on {day}, with the {feature} changes we talked about."),
     ("C1", "Sounds good. {C2}, anything from you?"),
     ("C2", "Nothing major, the {team} team is mostly self-sufficient now.")],
    [("V2", "If it helps, I can run a short session for the {team} team on building filters."),
     ("C1", "That would be great, maybe {day}?"),
     ("V2", "{day} works, I'll send an invite.")],
    [("C1", "Is there a way to export {report} straight to {integration}?"),
     ("V2", "Not directly yet; most teams schedule a CSV export and load it. Let me check with our product team and get back to you on that.")],
    [("V1", "How did the {team} team find the last training session?"),
     ("C2", "Good feedback overall, people liked the exercises.")],
    [("C1", "Quick one: who should the {team} team contact for access requests?"),
     ("V1", "Your workspace admin handles those; I'll resend the admin guide.")],
]

CALL_CLOSINGS = [
    ("V1", "Great, I'll send notes after this. Talk next week."),
    ("V1:csm", "Thanks all. I'll follow up with the action items."),
    ("C1", "Thanks, that was useful. Speak soon."),
    ("V1", "Perfect. Have a good rest of the week, everyone."),
]

CALL_KINDS = ["weekly-sync", "check-in", "onboarding", "office-hours", "working-session",
              "business-review", "roadmap-preview", "support-review"]

ACTIONS = [
    "update the {team} dashboard filters", "share the {integration} field mapping",
    "send the admin guide", "schedule the {feature} walkthrough", "clean up unused reports",
    "confirm the export schedule", "invite the {team} team to the channel",
]

# Context around an item turn (neutral, so that the item turn carries the claim alone).
SLACK_LEADS = [
    "Any updates from your side this week?", "How are things looking on your end?",
    "Checking in ahead of our sync, anything I should know?", "Quick pulse check: how's everything going?",
    "Anything new on your side before the weekend?", "How did this week go for the team?",
]
CALL_LEADS = [
    "Let's go around the table. Anything from your side?", "Before we wrap, anything else to cover?",
    "What's the latest on your end?", "Over to you, anything new?",
    "Any updates before we get into the agenda?",
]
EMAIL_SUBJECTS = [
    "Quick update", "Checking in", "A few updates from our side", "Catching up", "Update before our sync",
    "Notes from this week", "Where things stand", "Following up", "Update for {month}",
    "This week on our side", "A couple of things", "Update ahead of the QBR",
]
