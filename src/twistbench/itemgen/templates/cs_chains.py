"""Fact subjects for Track C update chains and Track B stale-assumption drafts.

A subject instance is (subject key, qualifier); one instance is used at most once per workspace
so that no two items touch the same fact. Value kinds are generated in cs_workspace.py
(`_value`), each with accepted surface variants.

Per subject:
- state / update: statement templates ({v} value, {old} previous value, {q} qualifier);
- coexist: two templates ({v}, {v2}) stating two compatible facts that look like an update;
- queries: current / history / post_resolution, and current_co / history_co for coexisting
  chains; {company} keeps every query unique across the dataset;
- drafts: stale (assumes {old}), ack (acknowledges {old} -> {v}), asks (asks whether {old} still
  holds). Drafts open with "Hi {first},".
"""

from __future__ import annotations

SUBJECTS: dict[str, dict[str, object]] = {
    "seats": {
        "kind": "seats",
        "qualifiers": ("finance", "operations", "customer support", "marketing", "sales ops",
                       "supply chain", "procurement", "field service", "risk", "billing"),
        "state": (
            "For the {q} team we're planning on {v} at renewal.",
            "Put us down for {v} for the {q} team.",
            "The {q} team will need {v} this year.",
        ),
        "update": (
            "Change on the {q} team: make that {v} instead of {old}.",
            "We're revising the {q} team to a new number: {v}, not {old}.",
            "New number for the {q} team: {v}. Please drop the {old} figure.",
        ),
        "coexist": (
            "The {q} team needs {v} for people who build reports.",
            "Separately, the {q} team also needs {v2} as view-only seats for managers; that's in addition to the editor seats.",
        ),
        "current": "How many seats is {company} planning for the {q} team now?",
        "history": "Has {company}'s seat count for the {q} team changed over time, and how?",
        "post_resolution": "Now that it has been resolved, what seat count should we use for {company}'s {q} team?",
        "current_co": "What seats has {company} asked for in the {q} team?",
        "history_co": "Did {company} replace its earlier seat request for the {q} team, or add to it?",
        "stale": "Hi {first}, attached is the renewal quote with {old} for the {q} team, as planned.",
        "ack": "Hi {first}, I know the {q} team moved from {old} to {v}, so the attached quote reflects {v}.",
        "asks": "Hi {first}, before I send the quote: is {old} still right for the {q} team, or has that number changed?",
    },
    "golive": {
        "kind": "date",
        "qualifiers": ("finance rollout", "support rollout", "EMEA rollout", "warehouse rollout",
                       "mobile rollout", "partner portal", "marketing rollout", "field service rollout"),
        "state": (
            "Go-live for the {q} is set for {v}.",
            "We're targeting {v} for the {q} go-live.",
            "The {q} goes live on {v}; that's in everyone's calendar.",
        ),
        "update": (
            "The {q} go-live has moved to {v}; {old} no longer works for us.",
            "New date for the {q}: {v} instead of {old}.",
            "Please note the {q} is now going live on {v}, not {old}.",
        ),
        "coexist": (
            "The pilot group for the {q} goes live on {v}.",
            "Full go-live for the {q}, everyone else, is {v2}; the pilot date stays as it is.",
        ),
        "current": "When is {company}'s {q} going live now?",
        "history": "Has the go-live date for {company}'s {q} changed, and from when to when?",
        "post_resolution": "After the date question was resolved, what go-live date holds for {company}'s {q}?",
        "current_co": "What go-live dates has {company} set for the {q}?",
        "history_co": "Did {company} move the {q} go-live, or are there two separate dates?",
        "stale": "Hi {first}, we've staffed our launch team for the {q} on {old}, as planned.",
        "ack": "Hi {first}, I saw the {q} moved from {old} to {v}; our launch team is now booked for {v}.",
        "asks": "Hi {first}, quick check on the {q}: are we still going live on {old}, or has the date moved?",
    },
    "billing_contact": {
        "kind": "person",
        "qualifiers": ("renewal invoices", "services invoices", "add-on invoices", "training invoices"),
        "state": (
            "Please send {q} to {v}.",
            "{v} is the right contact for {q}.",
            "For {q}, the contact on our side is {v}.",
        ),
        "update": (
            "From now on {q} go to {v} instead of {old}.",
            "Change of contact for {q}: {v} takes over from {old}.",
            "Please stop sending {q} to {old}; {v} handles them now.",
        ),
        "coexist": (
            "For {q}, the US entity contact is {v}.",
            "For {q} billed to our UK entity, the contact is {v2}; the US contact stays the same.",
        ),
        "current": "Who should {company}'s {q} be sent to now?",
        "history": "Has the contact for {company}'s {q} changed, and from whom to whom?",
        "post_resolution": "With the contact question resolved, who receives {company}'s {q}?",
        "current_co": "Who are {company}'s contacts for {q}?",
        "history_co": "Did {company} replace its contact for {q}, or are there two contacts?",
        "stale": "Hi {first}, I'll send the next {q} to {old} as usual.",
        "ack": "Hi {first}, noted that {v} now handles {q} instead of {old}; the next one goes to {v}.",
        "asks": "Hi {first}, should the next {q} still go to {old}, or has the contact changed?",
    },
    "sync_day": {
        "kind": "weekday",
        "qualifiers": ("weekly sync", "admin sync", "exec check-in", "office hours", "dashboard review"),
        "state": (
            "Let's hold the {q} on {v}s.",
            "{v}s work best for the {q}.",
            "We'll keep the {q} on {v}s going forward.",
        ),
        "update": (
            "We need to move the {q} to {v}s; {old}s no longer work.",
            "Switching the {q} from {old}s to {v}s, starting next week.",
            "New day for the {q}: {v}s instead of {old}s.",
        ),
        "coexist": (
            "The {q} for the US team is on {v}s.",
            "We're adding a second {q} for the EU team on {v2}s; the US one stays put.",
        ),
        "current": "Which day does {company} hold the {q} on now?",
        "history": "Has the day of {company}'s {q} changed, and how?",
        "post_resolution": "After the scheduling question was resolved, which day is {company}'s {q}?",
        "current_co": "On which days does {company} hold the {q}?",
        "history_co": "Did {company} move the {q} to a new day, or add a second one?",
        "stale": "Hi {first}, see you at the {q} on {old} as usual.",
        "ack": "Hi {first}, since the {q} moved from {old}s to {v}s, I've updated the invite to {v}.",
        "asks": "Hi {first}, is the {q} still on {old}s, or did that change?",
    },
    "budget": {
        "kind": "money",
        "qualifiers": ("add-on", "training", "services", "expansion", "consulting"),
        "state": (
            "Our {q} budget for this year is {v}.",
            "We have {v} set aside for {q} spend.",
            "Finance approved {v} for the {q} budget.",
        ),
        "update": (
            "The {q} budget got revised to {v} from {old}.",
            "Update: {q} budget is now {v}, not {old}.",
            "Finance changed the {q} budget to {v}; the {old} figure is gone.",
        ),
        "coexist": (
            "IT is funding {v} of the {q} budget.",
            "Marketing is adding {v2} to the {q} budget on top of IT's share.",
        ),
        "current": "What is {company}'s {q} budget now?",
        "history": "Has {company}'s {q} budget changed, and from what to what?",
        "post_resolution": "Once the budget question was resolved, what {q} budget does {company} have?",
        "current_co": "Who is funding {company}'s {q} budget, and how much each?",
        "history_co": "Did {company}'s {q} budget get replaced, or does it have two sources?",
        "stale": "Hi {first}, here's a {q} proposal sized to your {old} budget.",
        "ack": "Hi {first}, I know the {q} budget went from {old} to {v}, so this proposal fits within {v}.",
        "asks": "Hi {first}, is the {q} budget still {old}, or has it been revised?",
    },
    "po_number": {
        "kind": "po",
        "qualifiers": ("renewal", "services", "training", "add-on"),
        "state": (
            "Use {v} for the {q} invoice.",
            "The purchase order for the {q} is {v}.",
            "Please reference {v} on the {q} invoice.",
        ),
        "update": (
            "The {q} PO changed to {v}; please don't use {old}.",
            "New purchase order for the {q}: {v} replaces {old}.",
            "Procurement reissued the {q} PO as {v}, so {old} is void.",
        ),
        "coexist": (
            "The {q} licences go on {v}.",
            "The {q} implementation hours go on a separate PO, {v2}; the licence PO is unchanged.",
        ),
        "current": "Which PO number should {company}'s {q} invoice reference now?",
        "history": "Has the PO for {company}'s {q} changed, and from which number to which?",
        "post_resolution": "With the PO question resolved, which PO applies to {company}'s {q}?",
        "current_co": "Which PO numbers does {company} use for the {q}?",
        "history_co": "Did {company} replace the {q} PO, or are there two POs?",
        "stale": "Hi {first}, the {q} invoice is going out against {old}.",
        "ack": "Hi {first}, thanks for the new {q} PO; the invoice now references {v} instead of {old}.",
        "asks": "Hi {first}, should the {q} invoice still reference {old}, or is there a new PO?",
    },
    "admin_person": {
        "kind": "person",
        "qualifiers": ("workspace admin", "billing admin", "security contact", "data steward"),
        "state": (
            "{v} will be our {q}.",
            "Our {q} is {v}; send access requests there.",
            "Please list {v} as the {q}.",
        ),
        "update": (
            "{v} is taking over as {q} from {old}.",
            "Please change the {q} to {v}; {old} has moved teams.",
            "New {q}: {v}, replacing {old}.",
        ),
        "coexist": (
            "{v} is our primary {q}.",
            "We're also naming {v2} as backup {q}; {v} stays primary.",
        ),
        "current": "Who is {company}'s {q} now?",
        "history": "Has {company}'s {q} changed, and from whom to whom?",
        "post_resolution": "After it was resolved, who is {company}'s {q}?",
        "current_co": "Who are {company}'s {q} contacts?",
        "history_co": "Did {company} replace its {q}, or add a second one?",
        "stale": "Hi {first}, I've routed the access requests to {old}, your {q}.",
        "ack": "Hi {first}, I've noted that {v} replaced {old} as {q}, and routed requests to {v}.",
        "asks": "Hi {first}, is {old} still your {q}, or has someone taken over?",
    },
    "refresh": {
        "kind": "cadence",
        "qualifiers": ("the revenue dashboard", "the SLA report", "the inventory board",
                       "the pipeline summary", "the exec scorecard"),
        "state": (
            "We want {q} refreshed {v}.",
            "Refreshing {q} {v} is right for us.",
            "Let's set {q} to refresh {v}.",
        ),
        "update": (
            "Please switch {q} to refresh {v} instead of {old}.",
            "Change for {q}: refresh {v}, not {old}.",
            "We've decided {q} should refresh {v}; {old} is overkill now.",
        ),
        "coexist": (
            "On weekdays {q} should refresh {v}.",
            "On weekends {q} only needs to refresh {v2}; the weekday schedule stays.",
        ),
        "current": "How often does {company} want {q} refreshed now?",
        "history": "Has the refresh schedule {company} wants for {q} changed, and how?",
        "post_resolution": "With the schedule question resolved, how often should {q} refresh for {company}?",
        "current_co": "What refresh schedules has {company} asked for on {q}?",
        "history_co": "Did {company} change the refresh schedule for {q}, or set two schedules?",
        "stale": "Hi {first}, {q} is configured to refresh {old}, as you asked.",
        "ack": "Hi {first}, since you moved {q} from {old} to {v} refreshes, I've switched it to {v}.",
        "asks": "Hi {first}, should {q} still refresh {old}, or do you want a different schedule?",
    },
    "retention": {
        "kind": "duration",
        "qualifiers": ("raw event data", "audit logs", "export files", "session recordings"),
        "state": (
            "Keep {q} for {v}.",
            "Our policy for {q} is {v} of retention.",
            "Retention for {q} should be {v}.",
        ),
        "update": (
            "Legal changed retention for {q} to {v}, replacing {old}.",
            "Please set {q} retention to {v} instead of {old}.",
            "New retention rule for {q}: {v}. The {old} setting is out of date.",
        ),
        "coexist": (
            "For {q} from the US business, retention is {v}.",
            "For {q} from the EU business, retention is {v2}; the US rule is unchanged.",
        ),
        "current": "How long does {company} keep {q} now?",
        "history": "Has {company}'s retention period for {q} changed, and how?",
        "post_resolution": "After resolution, what retention period applies to {company}'s {q}?",
        "current_co": "What retention periods does {company} apply to {q}?",
        "history_co": "Did {company} change its retention for {q}, or does it have two rules?",
        "stale": "Hi {first}, we've configured {q} retention at {old}, per your policy.",
        "ack": "Hi {first}, with {q} retention changing from {old} to {v}, we've applied {v}.",
        "asks": "Hi {first}, is {q} retention still {old}, or has legal changed it?",
    },
    "timezone": {
        "kind": "timezone",
        "qualifiers": ("scheduled reports", "the SLA dashboard", "billing exports", "alert emails"),
        "state": (
            "Run {q} in {v}.",
            "{q} should use {v}.",
            "Please set {q} to {v}.",
        ),
        "update": (
            "Switch {q} to {v}; {old} confuses people.",
            "Change for {q}: {v} from now on, not {old}.",
            "We're moving {q} from {old} to {v}.",
        ),
        "coexist": (
            "For the US teams, {q} use {v}.",
            "For the Berlin team, {q} use {v2}; the US setting stays.",
        ),
        "current": "Which time zone does {company} want for {q} now?",
        "history": "Has the time zone {company} uses for {q} changed, and how?",
        "post_resolution": "Once resolved, which time zone applies to {company}'s {q}?",
        "current_co": "Which time zones does {company} use for {q}?",
        "history_co": "Did {company} switch time zones for {q}, or does it use two?",
        "stale": "Hi {first}, {q} are set to {old}, as you requested.",
        "ack": "Hi {first}, since you moved {q} from {old} to {v}, they now run on {v}.",
        "asks": "Hi {first}, should {q} still run in {old}, or has that changed?",
    },
    "export_format": {
        "kind": "format",
        "qualifiers": ("the board pack", "the monthly close report", "the weekly ops digest",
                       "the partner report"),
        "state": (
            "Send {q} as {v}.",
            "We'd like {q} delivered in {v}.",
            "{q} should arrive as {v}.",
        ),
        "update": (
            "Please send {q} as {v} from now on, not {old}.",
            "Switch {q} to {v}; {old} doesn't work for us anymore.",
            "Change of format for {q}: {v} instead of {old}.",
        ),
        "coexist": (
            "Finance wants {q} as {v}.",
            "The ops team also wants {q}, but as {v2}; finance keeps its format.",
        ),
        "current": "In which format does {company} want {q} now?",
        "history": "Has the format {company} wants for {q} changed, and how?",
        "post_resolution": "After resolution, in which format should {q} go to {company}?",
        "current_co": "In which formats does {company} receive {q}?",
        "history_co": "Did {company} change the format of {q}, or ask for two formats?",
        "stale": "Hi {first}, {q} for this month is attached as {old}, as usual.",
        "ack": "Hi {first}, as you switched {q} from {old} to {v}, this month's is attached as {v}.",
        "asks": "Hi {first}, do you still want {q} as {old}, or in a different format?",
    },
    "training_city": {
        "kind": "city",
        "qualifiers": ("admin training", "user conference session", "kickoff offsite",
                       "executive briefing"),
        "state": (
            "The {q} will be in {v}.",
            "Let's hold the {q} in {v}.",
            "We've booked the {q} in {v}.",
        ),
        "update": (
            "The {q} is moving to {v}; {old} fell through.",
            "New location for the {q}: {v}, not {old}.",
            "We've relocated the {q} from {old} to {v}.",
        ),
        "coexist": (
            "The first {q} session is in {v}.",
            "We're adding a second {q} session in {v2}; the first one stays where it is.",
        ),
        "current": "Where is {company}'s {q} taking place now?",
        "history": "Has the location of {company}'s {q} changed, and from where to where?",
        "post_resolution": "After resolution, where will {company}'s {q} be?",
        "current_co": "Where are {company}'s {q} sessions?",
        "history_co": "Did {company} move the {q}, or add a second location?",
        "stale": "Hi {first}, our trainers are booked to fly to {old} for the {q}.",
        "ack": "Hi {first}, since the {q} moved from {old} to {v}, our trainers are rebooked for {v}.",
        "asks": "Hi {first}, is the {q} still in {old}, or has the location changed?",
    },
}

VALUE_POOLS: dict[str, list[tuple[str, list[str]]]] = {
    "cadence": [("hourly", ["every hour"]), ("daily", ["once a day", "every day"]),
                ("every 15 minutes", ["15-minute", "quarter-hourly"]),
                ("weekly", ["once a week", "every week"]), ("twice a day", ["2x daily"]),
                ("every 4 hours", ["four-hourly", "every four hours"])],
    "duration": [("90 days", ["three months", "3 months"]), ("13 months", ["thirteen months"]),
                 ("two years", ["24 months", "2 years"]), ("one year", ["12 months", "1 year"]),
                 ("six months", ["180 days", "6 months"]), ("seven years", ["7 years"])],
    "timezone": [("UTC", ["GMT"]), ("US Eastern time", ["Eastern", "ET"]),
                 ("Central European Time", ["CET"]), ("US Pacific time", ["Pacific", "PT"]),
                 ("US Central time", ["Central", "CT"]), ("Singapore time", ["SGT"])],
    "format": [("Excel", ["xlsx"]), ("CSV", ["comma-separated"]), ("PDF", []),
               ("Google Sheets", ["Sheets"]), ("PowerPoint", ["pptx", "slides"])],
    "city": [("Chicago", []), ("Denver", []), ("Austin", []), ("Toronto", []), ("Dublin", []),
             ("Amsterdam", []), ("Atlanta", []), ("Seattle", []), ("Lisbon", []), ("Boston", [])],
    "weekday": [(d, [d + "s"]) for d in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")],
}
