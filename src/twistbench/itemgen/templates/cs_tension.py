"""Track A templates: topics (business stances) and the frames that carry them.

A topic holds clauses (lower-case start, no final punctuation) for one stance:
- anchor: the stance stated;
- pos: the stance re-affirmed (hard negatives that stay consistent use it);
- neg: the stance reversed (reversal turns, and acknowledged changes of mind);
- would / cond: the reversal as a hypothetical consequent and its condition;
- drift: softening signals before a flip;
- pressure: outside pressure that is not a stance change by itself;
- nostalgia: looking back on an earlier state while the stance still holds.
Frames wrap a clause into a turn; the frame id plus the clause index is the template id.
Reversals and their hard negatives share the topic vocabulary and slot values, and the frames of
each side reuse the other side's function words ("if", "still", "said", "update", "now"), so
that wording alone does not give the label away (itemgen/variety.py measures it).

Slots: competitor price feature integration quarter team region legacy pct colleague sso
product vendor anchor_month.
"""

from __future__ import annotations

import re

TOPICS: dict[str, dict[str, object]] = {
    "renewal": {
        "title": "renewal intent at the current price",
        "roles": ("economic_buyer", "champion"),
        "anchor": (
            "renewing at {price} is a no-brainer for us",
            "we're renewing, and at {price} there's nothing to debate",
            "the renewal at {price} is an easy yes from finance",
        ),
        "pos": (
            "renewing at {price} is still the plan",
            "the renewal at {price} remains an easy yes",
        ),
        "neg": (
            "at {price} we're evaluating {competitor} before we renew anything",
            "renewing at {price} is no longer an easy yes, and finance wants a {competitor} quote side by side",
            "the renewal is off the table at {price}; we've started a trial with {competitor}",
        ),
        "would": (
            "we'd be evaluating {competitor} instead of renewing",
            "renewing at {price} wouldn't be an easy yes",
        ),
        "cond": (
            "{competitor} offered us the same thing for half of {price}",
            "your price jumped well above {price}",
        ),
        "drift": (
            "finance keeps asking me to justify the {price} line at renewal",
            "{competitor} has been emailing our CFO about the renewal",
        ),
        "pressure": (
            "finance is reviewing all SaaS contracts over {price} this year, yours included",
            "our CFO wants a {competitor} quote on file for each renewal as a matter of policy",
        ),
        "nostalgia": (
            "back when we were evaluating {competitor} before signing with you, the process took months, and now renewing at {price} is a simple yes",
            "I remember finance arguing for a week over the first {price} invoice; these days the renewal is an easy yes",
        ),
    },
    "champion_staying": {
        "title": "the champion staying on as rollout owner",
        "roles": ("champion", "admin"),
        "anchor": (
            "I'm not going anywhere; I'll own this rollout through the end of the year",
            "I'm staying on as the owner of {product} here, you can count on me",
            "I'll be your point person for the long haul, no plans to move on",
        ),
        "pos": (
            "I'm still the owner of the rollout and staying put",
            "I remain your point person here",
        ),
        "neg": (
            "I've accepted a role at another company and {colleague} will take over the rollout next month",
            "I'm leaving the company at the end of the month, so I won't own the rollout after all",
            "I'm moving on from this job, and someone on the {team} team will pick up {product}",
        ),
        "would": (
            "I'd be handing the rollout to {colleague}",
            "I'd be moving on and someone else would own {product}",
        ),
        "cond": (
            "the reorg moved analytics under the {team} team",
            "a recruiter made me an offer I couldn't refuse",
        ),
        "drift": (
            "the reorg has me spending half my week on {team} work instead of the rollout",
            "I've been pulled onto other projects and the rollout is getting less of my time",
        ),
        "pressure": (
            "the {team} team is being reorganised and a few roles around me are changing",
            "HR announced a reorg that touches the analytics group",
        ),
        "nostalgia": (
            "when I first took over the rollout I had no idea what {product} could do, and now I can't imagine handing it to anyone else",
            "I remember {colleague} asking who'd own the rollout and me volunteering on the spot; still happy I did",
        ),
    },
    "support_quality": {
        "title": "satisfaction with vendor support",
        "roles": ("champion", "end_user", "admin"),
        "anchor": (
            "your support team has been fantastic, every ticket closed within a day",
            "support is the best part of working with {vendor}, honestly",
            "we've never had a support experience this good, tickets get solved the same day",
        ),
        "pos": (
            "support is still the best part of working with {vendor}",
            "your support team is excellent for us, as always",
        ),
        "neg": (
            "support is now the main reason we're questioning the contract; tickets sit for a week",
            "the support experience has fallen apart, and the {team} team has stopped filing tickets because nothing gets solved",
            "support has become the weakest part of working with {vendor}, and it's hurting the renewal",
        ),
        "would": (
            "support would be the reason we questioned the contract",
            "we'd stop filing tickets altogether",
        ),
        "cond": (
            "tickets started sitting for a week",
            "the support team stopped answering the {team} team",
        ),
        "drift": (
            "the last two tickets took longer than usual to close",
            "the {team} team mentioned they waited three days on a ticket",
        ),
        "pressure": (
            "our own helpdesk is swamped this month, so tickets from us may come in bursts",
            "the {team} team is filing a lot more tickets since the {feature} launch",
        ),
        "nostalgia": (
            "I remember the first week when we filed twenty tickets and your team closed them all by Friday; support is still the best part of working with {vendor}",
            "{colleague} still tells the story of the midnight ticket your support team solved during our launch",
        ),
    },
    "sso_scope": {
        "title": "whether single sign-on is in scope",
        "roles": ("admin", "champion"),
        "anchor": (
            "SSO isn't a requirement for us, password logins are fine",
            "we don't need {sso} single sign-on for this rollout",
            "SSO is out of scope for us, our people are fine with passwords",
        ),
        "pos": (
            "password logins are still fine and SSO stays out of scope",
            "we don't need SSO for this rollout, same as before",
        ),
        "neg": (
            "we can't sign off without {sso} single sign-on, it's now a hard requirement",
            "security says SSO through {sso} is mandatory before go-live, so password logins are out",
            "SSO is now in scope and blocking, and nobody logs in with passwords after next month",
        ),
        "would": (
            "SSO through {sso} would become a hard requirement",
            "we couldn't sign off without SSO",
        ),
        "cond": (
            "our auditors made single sign-on mandatory for every tool",
            "we had a password incident",
        ),
        "drift": (
            "security has started asking which tools still use password logins",
            "our auditors asked about {sso} coverage for every vendor",
        ),
        "pressure": (
            "security is rolling {sso} out company-wide over the next year",
            "our auditors are reviewing access controls for all vendors this quarter",
        ),
        "nostalgia": (
            "I remember when we had forty different password logins and nobody cared; password logins are still fine for this rollout",
            "back when we set up {sso} for email it took us six months, so I'm glad SSO is out of scope here",
        ),
    },
    "integration_critical": {
        "title": "how critical the CRM/warehouse connector is",
        "roles": ("champion", "admin"),
        "anchor": (
            "the {integration} connector is the one thing we can't live without",
            "everything we do depends on the {integration} connector",
            "the {integration} integration is non-negotiable for us",
        ),
        "pos": (
            "the {integration} connector is still the piece we can't live without",
            "we depend on the {integration} connector for everything, as ever",
        ),
        "neg": (
            "we've stopped using the {integration} connector entirely and don't need it anymore",
            "the {integration} connector doesn't matter to us now; we're moving that data through a different pipeline",
            "the {integration} integration is no longer needed, we're decommissioning {integration} itself",
        ),
        "would": (
            "we wouldn't need the {integration} connector at all",
            "the {integration} integration would stop mattering",
        ),
        "cond": (
            "we migrated off {integration}",
            "IT built its own pipeline into the warehouse",
        ),
        "drift": (
            "IT is building a separate pipeline that may overlap with the {integration} connector",
            "fewer reports are pulling from {integration} than last quarter",
        ),
        "pressure": (
            "IT is reviewing all our {integration} licences this year",
            "the {integration} contract is up for renewal on our side",
        ),
        "nostalgia": (
            "I remember the day the {integration} connector first synced and the {team} team cheered; we still depend on it for everything",
            "back when we exported {integration} data by hand every Monday, it took hours; glad we have the connector now",
        ),
    },
    "launch_timeline": {
        "title": "the launch date",
        "roles": ("champion", "economic_buyer"),
        "anchor": (
            "there's no way we slip the {quarter} launch, it's locked",
            "the {quarter} launch date is fixed and everyone's committed to it",
            "we're launching in {quarter}, full stop",
        ),
        "pos": (
            "the {quarter} launch is still locked",
            "we're launching in {quarter} as planned",
        ),
        "neg": (
            "the {quarter} launch is going to slip and we've accepted that",
            "we're pushing the launch out of {quarter}, probably by two quarters",
            "the {quarter} date is dead; leadership moved the launch to next year",
        ),
        "would": (
            "the {quarter} launch would slip",
            "we'd push the launch out of {quarter}",
        ),
        "cond": (
            "the {integration} migration ran late",
            "half the {team} team got pulled onto the audit",
        ),
        "drift": (
            "the {integration} migration is running a little behind, which puts pressure on {quarter}",
            "a couple of people on the {team} team are stretched thin ahead of {quarter}",
        ),
        "pressure": (
            "the {team} team has a big audit landing right around {quarter}",
            "leadership is reviewing all project timelines this month",
        ),
        "nostalgia": (
            "I remember when {quarter} felt impossibly far away; now the launch is locked and close",
            "back when we first sketched the {quarter} plan on a whiteboard, {colleague} thought we were dreaming, and it's still locked",
        ),
    },
    "multi_year": {
        "title": "a multi-year contract term",
        "roles": ("economic_buyer",),
        "anchor": (
            "we'd sign a three-year deal today if it locks in {price}",
            "a multi-year term at {price} is exactly what we want",
            "we're ready to commit for three years at {price}",
        ),
        "pos": (
            "a three-year term at {price} is still what we want",
            "we're ready to commit for three years, same as before",
        ),
        "neg": (
            "a multi-year term is off the table for us, even at {price}",
            "we'll only sign a single year now, since three years at {price} isn't something finance will approve",
            "we won't commit beyond twelve months, whatever the price",
        ),
        "would": (
            "we'd only sign a single year",
            "a three-year term wouldn't get approved",
        ),
        "cond": (
            "the board froze all multi-year commitments",
            "{competitor} launched something cheaper",
        ),
        "drift": (
            "finance has started asking whether three years is too long a commitment",
            "the board is looking hard at long contracts this year",
        ),
        "pressure": (
            "the board reviews every commitment over {price} each quarter",
            "finance is standardising how we sign multi-year contracts",
        ),
        "nostalgia": (
            "I remember our first contract was a month-to-month trial; now a three-year term at {price} is what we want",
            "back when {colleague} negotiated our first year, three years felt like forever; today it's an easy commitment",
        ),
    },
    "training": {
        "title": "whether formal training is needed",
        "roles": ("champion", "economic_buyer", "admin"),
        "anchor": (
            "our people don't need formal training, they'll pick {product} up themselves",
            "we'll skip the training package; the {team} team learns tools on its own",
            "formal training isn't necessary for us, self-serve docs are enough",
        ),
        "pos": (
            "self-serve docs are still enough for our people",
            "we won't need the training package",
        ),
        "neg": (
            "we need formal training for the whole {team} team before anyone logs in",
            "self-serve isn't working and we want the full training package after all",
            "nobody is learning {product} on their own, so training is now a must-have",
        ),
        "would": (
            "we'd need formal training for the {team} team",
            "we'd buy the full training package",
        ),
        "cond": (
            "the {team} team doubled in size",
            "adoption stalled below half",
        ),
        "drift": (
            "a few people on the {team} team keep asking how to build basic reports",
            "adoption in the {team} team is slower than we hoped",
        ),
        "pressure": (
            "HR wants every new tool to have a training plan on file",
            "we're hiring twenty people into the {team} team this quarter",
        ),
        "nostalgia": (
            "I remember teaching myself {legacy} over a weekend; our people still pick tools up the same way",
            "back when we rolled out {legacy}, nobody had training and it went fine, which is why self-serve docs are still enough",
        ),
    },
    "data_residency": {
        "title": "where the data is hosted",
        "roles": ("admin", "economic_buyer"),
        "anchor": (
            "hosting in the US region is totally fine for us",
            "we have no data residency requirements, US hosting works",
            "where the data lives doesn't matter to us, the US region is fine",
        ),
        "pos": (
            "US hosting is still fine for us",
            "we have no residency requirements, as before",
        ),
        "neg": (
            "our data has to stay in the {region} region, and US hosting won't pass review",
            "legal now requires {region} residency and the US region is a blocker",
            "we can't keep data in the US region anymore; it must move to {region} hosting",
        ),
        "would": (
            "our data would have to stay in the {region} region",
            "US hosting wouldn't pass review",
        ),
        "cond": (
            "we opened the {region} entity",
            "legal changed our data policy",
        ),
        "drift": (
            "legal has started asking where each vendor stores our data",
            "our {region} colleagues asked about hosting locations",
        ),
        "pressure": (
            "legal is mapping where our vendors store data this year",
            "we're opening an office in the {region} market",
        ),
        "nostalgia": (
            "I remember when nobody here even asked where data lived; US hosting is still fine for us",
            "back when {colleague} ran IT, residency never came up, and it still doesn't for this contract",
        ),
    },
    "pilot_success": {
        "title": "how the pilot is going",
        "roles": ("champion", "end_user"),
        "anchor": (
            "the pilot has been a clear success, the {team} team loves it",
            "the {team} team is thrilled with the pilot and uses it daily",
            "the pilot is working brilliantly for the {team} team",
        ),
        "pos": (
            "the pilot is still a clear success",
            "the {team} team loves it, same as always",
        ),
        "neg": (
            "the pilot hasn't worked for the {team} team and they've stopped logging in",
            "the {team} team has given up on the pilot; usage is close to zero",
            "the pilot is a failure as far as the {team} team is concerned",
        ),
        "would": (
            "the {team} team would stop logging in",
            "the pilot wouldn't be working",
        ),
        "cond": (
            "the {feature} rollout broke their workflow",
            "they lost the {integration} data",
        ),
        "drift": (
            "logins from the {team} team dipped last week",
            "a couple of people on the {team} team said {feature} is confusing",
        ),
        "pressure": (
            "the {team} team is buried in quarter-end work, so logins will look quiet",
            "half the {team} team is on holiday this month",
        ),
        "nostalgia": (
            "I remember the {team} team's first login day, everyone crowded around one laptop; they still love it",
            "back when the pilot was just three users, {colleague} built the first dashboard; it's still a clear success",
        ),
    },
    "roadmap_commit": {
        "title": "a roadmap commitment from the vendor",
        "roles": ("ae", "solutions_eng", "csm"),
        "anchor": (
            "we can absolutely have {feature} ready for you by {quarter}",
            "{feature} is committed on our roadmap for {quarter}",
            "you'll have {feature} in {quarter}, I've confirmed it with product",
        ),
        "pos": (
            "{feature} is still on track for {quarter}",
            "the {quarter} commitment on {feature} stands",
        ),
        "neg": (
            "{feature} won't make it into {quarter}, product pulled it from the roadmap",
            "we can't deliver {feature} by {quarter} after all; there's no date now",
            "{feature} has been deprioritised and won't ship in {quarter}",
        ),
        "would": (
            "{feature} wouldn't make {quarter}",
            "we'd have to pull {feature} from the roadmap",
        ),
        "cond": (
            "product reshuffled the whole roadmap",
            "the platform team lost half its engineers",
        ),
        "drift": (
            "product is re-planning the {quarter} roadmap this week",
            "the {feature} team has hit a couple of snags",
        ),
        "pressure": (
            "product reviews the whole roadmap every quarter, so you'll see the usual re-planning notes",
            "engineering is hiring for the team that builds {feature}",
        ),
        "nostalgia": (
            "I remember when {feature} was just a sketch in a customer workshop; it's still on track for {quarter}",
            "back when you first asked for {feature}, it felt years away, and now the {quarter} commitment still stands",
        ),
    },
    "discount": {
        "title": "the renewal discount",
        "roles": ("ae", "csm"),
        "anchor": (
            "the {pct} discount is guaranteed for the renewal, you have my word",
            "you'll keep the {pct} discount at renewal, that's locked in",
            "the renewal will include the {pct} discount, no question",
        ),
        "pos": (
            "the {pct} discount is still guaranteed",
            "you'll keep the {pct} discount at renewal, as promised",
        ),
        "neg": (
            "the {pct} discount won't be available on the renewal",
            "we can't honour the {pct} discount at renewal, so list price applies",
            "the renewal will go out without the {pct} discount, that decision is made",
        ),
        "would": (
            "the {pct} discount wouldn't be available",
            "list price would apply at renewal",
        ),
        "cond": (
            "deal desk changed the discount policy",
            "you dropped below the volume tier",
        ),
        "drift": (
            "deal desk is asking more questions about discounts this quarter",
            "finance has been reviewing discount levels across accounts",
        ),
        "pressure": (
            "our deal desk reviews every discount over {pct} as a matter of course",
            "finance is auditing discounts across all renewals this year",
        ),
        "nostalgia": (
            "I remember negotiating the {pct} discount over lunch with {colleague}; it's still guaranteed",
            "back when we first agreed the {pct} discount, it took three calls; it's locked in for the renewal",
        ),
    },
    "tool_consolidation": {
        "title": "retiring the legacy reporting tool",
        "roles": ("champion", "economic_buyer"),
        "anchor": (
            "we're retiring {legacy} and going all-in on {product}",
            "{legacy} is being switched off and {product} replaces it everywhere",
            "{product} is replacing {legacy} across the company",
        ),
        "pos": (
            "we're still retiring {legacy}",
            "{product} is replacing {legacy} everywhere, as planned",
        ),
        "neg": (
            "we're keeping {legacy} and using {product} only for the {team} team",
            "{legacy} is staying; {product} won't replace it company-wide",
            "we've decided not to retire {legacy}, so {product} stays a side tool",
        ),
        "would": (
            "we'd keep {legacy}",
            "{product} wouldn't replace {legacy}",
        ),
        "cond": (
            "the migration cost doubled",
            "leadership got attached to {legacy}",
        ),
        "drift": (
            "some of the {team} team are still building new reports in {legacy}",
            "the migration off {legacy} is going slower than planned",
        ),
        "pressure": (
            "leadership is reviewing all tool migrations this quarter",
            "IT has a freeze on decommissioning systems until the audit is done",
        ),
        "nostalgia": (
            "I remember building my first report in {legacy} years ago; still, retiring it is the right call",
            "back when {legacy} was new, everyone loved it, and now we're still switching it off for {product}",
        ),
    },
    "security_review": {
        "title": "the security review",
        "roles": ("admin", "economic_buyer"),
        "anchor": (
            "the security review is a formality, our CISO already signed off",
            "security has approved {product}, no blockers there",
            "our CISO is fully on board and the security review is done",
        ),
        "pos": (
            "the security review is still done and approved",
            "our CISO is fully on board, as before",
        ),
        "neg": (
            "the security review is blocking us; our CISO hasn't signed off and has new concerns",
            "the CISO withdrew approval and the security review is open again",
            "security has not approved {product}, there are blockers we need to work through",
        ),
        "would": (
            "our CISO would block the deal",
            "the security review would reopen",
        ),
        "cond": (
            "there was a breach in the news at a vendor like you",
            "your SOC 2 report lapsed",
        ),
        "drift": (
            "our CISO asked for your latest SOC 2 report again",
            "security raised a couple of questions about {feature}",
        ),
        "pressure": (
            "security is re-reviewing vendors after a phishing incident here",
            "our CISO is rolling out a new vendor risk questionnaire",
        ),
        "nostalgia": (
            "I remember our first security questionnaire was three hundred questions; today the review is done and approved",
            "back when {colleague} ran security, reviews took months; our CISO is still fully on board with you",
        ),
    },
    "api_usage": {
        "title": "whether the customer will use the API",
        "roles": ("champion", "admin"),
        "anchor": (
            "we'll never touch the API, everything goes through the UI",
            "the API isn't for us, our people work in the UI only",
            "we have no plans to use the API at all",
        ),
        "pos": (
            "we're still UI-only",
            "we have no plans to use the API, and won't",
        ),
        "neg": (
            "we're building our whole workflow on the API now",
            "the {team} team is moving everything to the API and barely uses the UI",
            "API access is now essential to us, and our engineers are wiring it into {integration}",
        ),
        "would": (
            "we'd build on the API",
            "the API would become essential",
        ),
        "cond": (
            "the {team} team hired engineers",
            "we automated the {integration} sync",
        ),
        "drift": (
            "our engineers asked for API documentation last week",
            "a few people are scripting exports out of the UI",
        ),
        "pressure": (
            "IT is cataloguing all the API keys in the company",
            "the {team} team just hired two data engineers",
        ),
        "nostalgia": (
            "I remember when {colleague} tried to script an export and gave up; we're still UI-only",
            "back when we used {legacy}, nobody touched an API, and we're still UI-only",
        ),
    },
    "admin_ownership": {
        "title": "who administers the platform",
        "roles": ("admin", "champion", "economic_buyer"),
        "anchor": (
            "IT will own administration of {product}, not my team",
            "admin work sits with IT, we won't touch user management",
            "IT is the owner for {product} administration",
        ),
        "pos": (
            "IT still owns administration",
            "admin work sits with IT, as agreed",
        ),
        "neg": (
            "my team is taking over administration from IT next month",
            "IT is handing {product} administration to the {team} team",
            "IT won't own administration after all; it's moving to us",
        ),
        "would": (
            "my team would take over administration",
            "IT would hand administration to the {team} team",
        ),
        "cond": (
            "IT lost its headcount",
            "the {team} team grew past fifty users",
        ),
        "drift": (
            "IT has been slow on user requests lately",
            "the {team} team keeps asking for admin rights",
        ),
        "pressure": (
            "IT is stretched thin with the office move",
            "IT is auditing who has admin rights everywhere",
        ),
        "nostalgia": (
            "I remember when I was the only admin and reset passwords at midnight; IT still owns it now, thankfully",
            "back when {colleague} handled admin for {legacy}, it ate half the week; IT still owns administration now",
        ),
    },
    "expansion": {
        "title": "expanding to another team",
        "roles": ("economic_buyer", "champion"),
        "anchor": (
            "we want to roll {product} out to the {team} team next quarter",
            "the {team} team is next in line for {product}, budget approved",
            "expanding to the {team} team is a priority for us",
        ),
        "pos": (
            "the {team} expansion is still a priority",
            "we want the {team} team on {product}, as planned",
        ),
        "neg": (
            "we're not rolling {product} out to the {team} team after all",
            "the {team} expansion is cancelled and the budget went elsewhere",
            "expanding to the {team} team is off the table for this year",
        ),
        "would": (
            "we'd cancel the {team} expansion",
            "the {team} team wouldn't get {product}",
        ),
        "cond": (
            "budgets were cut by a third",
            "the {team} team got outsourced",
        ),
        "drift": (
            "the {team} team's budget is under review",
            "the {team} team lead is not sure about timing",
        ),
        "pressure": (
            "all teams are re-submitting budgets this quarter",
            "the {team} team has a new director starting next month",
        ),
        "nostalgia": (
            "I remember pitching {product} to the {team} team in a hallway chat; the expansion is still a priority",
            "back when we had just one team on {product}, {colleague} said the {team} team would be next, and they still are",
        ),
    },
    "reference_customer": {
        "title": "being a public reference",
        "roles": ("champion", "economic_buyer"),
        "anchor": (
            "we're happy to be a public reference for {vendor}",
            "put us down as a reference customer, I'll take the calls",
            "you can use our name in case studies",
        ),
        "pos": (
            "we're still happy to be a reference",
            "you can use our name, as usual",
        ),
        "neg": (
            "we can't be a reference for {vendor} anymore, legal said no",
            "please take our name out of your case studies, we won't take reference calls",
            "being a public reference is off for us now",
        ),
        "would": (
            "we couldn't be a reference",
            "legal would make us pull our name",
        ),
        "cond": (
            "legal banned vendor endorsements",
            "we got acquired",
        ),
        "drift": (
            "legal has started asking about vendor endorsements",
            "comms wants to review any public use of our logo",
        ),
        "pressure": (
            "comms reviews any public mention of our company as standard",
            "legal is updating our policy on logos this year",
        ),
        "nostalgia": (
            "I remember our first reference call, I was so nervous; happy to keep doing them",
            "back when {colleague} wrote our first case study with you, we got so many messages; you can still use our name",
        ),
    },
}

# Frames. "{X}" = the clause capitalised; "{x}" = as written.
ANCHOR_FRAMES = {
    "a01": "{Anchor}.",
    "a02": "To be clear, {anchor}.",
    "a03": "{Anchor} — no hesitation on that.",
    "a04": "Let me say it plainly: {anchor}.",
    "a05": "For what it's worth, {anchor}.",
    "a06": "{Anchor}. That's the view across the team.",
    "a07": "Honestly, {anchor}.",
    "a08": "On the question you asked: {anchor}.",
    "a09": "{Anchor}, and I don't see that changing.",
    "a10": "Just so you know where we stand, {anchor}.",
    "a11": "Quick answer: {anchor}.",
    "a12": "{Anchor}. Happy to put that in writing.",
}

DRIFT_FRAMES = {
    "d01": "{Drift}.",
    "d02": "Honestly, {drift}.",
    "d03": "Not urgent, but {drift}.",
    "d04": "{Drift}, which I didn't expect.",
    "d05": "I'm starting to notice that {drift}.",
    "d06": "Something on my mind: {drift}.",
    "d07": "{Drift}. Let's keep an eye on it.",
    "d08": "Between us, {drift}.",
    "d09": "Small flag: {drift}.",
    "d10": "I'll be honest, {drift}.",
    "d11": "{colleague} pointed out that {drift}.",
    "d12": "Lately {drift}.",
}

REVERSAL_FRAMES = {
    "r01": "{Neg}.",
    "r02": "Quick update from our side: {neg}.",
    "r03": "I'll be straight with you: {neg}.",
    "r04": "{Neg}, and we'd rather you hear it from us than from procurement.",
    "r05": "Heads-up before our next call — {neg}.",
    "r06": "After the last few weeks, {neg}.",
    "r07": "For your notes, I'll be brief: {neg}.",
    "r08": "So, {neg}. Happy to walk through the reasons on a call.",
    "r09": "{Neg}. If anything shifts I'll tell you.",
    "r10": "Honestly, I'll just say it: {neg}.",
    "r11": "Where we've landed internally: {neg}.",
    "r12": "Not the news you were hoping for, I know, but {neg}.",
    "r13": "{Neg} — the leadership team agreed on it yesterday.",
    "r14": "Seriously, {neg}, and that's where it stands this year.",
    "r15": "As {colleague} said on Tuesday, {neg}.",
    "r16": "Just so it's clear, I'm writing it down: {neg}.",
    "r17": "No joke, {neg}.",
    "r18": "Thinking about it more this week, {neg}.",
    # Frames that borrow the hard negatives' function words without softening the reversal.
    "r19": "We still like working with {colleague}, but {neg}.",
    "r20": "If it helps your planning, {neg}.",
    "r21": "I remember the question from the last call, so: {neg}.",
    "r22": "{colleague} said you'd want to know early: {neg}.",
    "r23": "No hypotheticals here, and no ifs: {neg}.",
    "r24": "Joking aside, if I'm straight with you, {neg}.",
    "r25": "Not a pressure tactic, just where things are: {neg}.",
    "r26": "Finance is still reviewing the details, but the decision is made: {neg}.",
    "r27": "Nothing dramatic otherwise; {neg}.",
    "r28": "In practice, I can tell you that {neg}.",
    "r29": "Looking at it today, {neg}. Please update the account plan.",
    "r30": "For the record, {neg}.",
    "r31": "My view after this week: {neg}.",
    "r32": "I checked with my team, and {neg}.",
    "r33": "Here's what we decided: {neg}.",
    "r34": "Back from the offsite, and {neg}.",
    "r35": "When we met with the board, it became clear: {neg}.",
    "r36": "I have to tell you what my boss decided: {neg}.",
    "r37": "What I can say today: {neg}.",
    "r38": "Earlier this week the team agreed, so I'll pass it on: {neg}.",
    "r39": "A lot happened since earlier this month; {neg}.",
    "r40": "I said to {colleague} that you should hear it first: {neg}.",
    "r41": "Back to the point of my email, first things first: {neg}.",
    "r42": "If I'm honest, {neg}.",
    "r43": "That's the reason for my note: {neg}.",
    "r44": "We'd rather be upfront with you: {neg}.",
    "r45": "I think you should know that {neg}.",
    "r46": "I remember you asked for early warning on anything big, so here it is: {neg}.",
    "r47": "Back when we kicked off you asked me to be direct, so: {neg}.",
    "r48": "First thing this morning we made the call: {neg}.",
    "r49": "Remember the budget meeting I mentioned? The outcome: {neg}.",
    "r50": "I've told {colleague} already, and now you: {neg}.",
    "r51": "I would rather not do this by email, but {neg}.",
    "r52": "Still processing it myself since earlier today, but {neg}.",
    "r53": "My update for the quarter: {neg}.",
    "r54": "Earlier today I got the final word: {neg}.",
    "r55": "If you were wondering why I went quiet: {neg}.",
    "r56": "I told my boss I'd let you know right away: {neg}.",
    "r57": "Then there's the bigger news: {neg}.",
    "r58": "The board met on Tuesday and it was clear: {neg}.",
    "r59": "It took a while from when we first discussed the budget, but {neg}.",
    "r60": "Last month was rough, from when the first budget cuts landed; {neg}.",
    "r61": "I wish I could say it would only happen if things got worse, but {neg}.",
    "r62": "We'd still hoped it wouldn't come to this, but {neg}.",
    "r63": "Would love to say otherwise, but {neg}.",
    "r64": "If you're wondering whether this is final, it is: {neg}.",
    "r65": "Please update your notes: {neg}.",
    "r66": "Budgets are tight this quarter, and {neg}.",
    "r67": "Our CFO has weighed in: {neg}.",
    "r68": "With the audit landing this quarter, {neg}.",
    "r69": "When I got back from leave, it was already settled: {neg}.",
    "r70": "As of this week, {neg}.",
    "r71": "As I mentioned to {colleague}, {neg}.",
    "r72": "Our finance team is reviewing spend across the board, and {neg}.",
    "r73": "With the reorg this quarter, {neg}.",
    "r74": "Our CFO asked every team to cut back, and in our case {neg}.",
    "r75": "Procurement is busy with year-end, but the outcome is clear: {neg}.",
    "r76": "Security and legal both had their say this month; {neg}.",
}

# Share of reversal turns that open with an outside-pressure reason ("Finance is reviewing ...").
REVERSAL_REASON_RATE = 0.3
# Share that open with a memory instead (the look-back half of a nostalgia clause).
REVERSAL_MEMORY_RATE = 0.2
_AFFIRMATION = re.compile(r"(; |, and now |, and it's |, and they |, and we're |, so I'm |"
                          r", which is why |, and it still |, and now the )")


def memory_part(nostalgia_clause: str) -> str:
    """The look-back half of a nostalgia clause ("I remember X; still Y" -> "I remember X")."""
    return _AFFIRMATION.split(nostalgia_clause, maxsplit=1)[0]


# Reversal frames by the hard-negative family whose function words they borrow ("plain" borrows
# none). A reversal picks a group uniformly, then a frame, so each family's marker words show up
# in reversal turns at about the rate they show up in hard-negative turns.
REVERSAL_FRAME_GROUPS = {
    "plain": ("r70", "r71", "r01", "r02", "r03", "r04", "r05", "r06", "r07", "r08", "r10", "r11", "r12",
              "r13", "r14", "r16", "r17", "r18", "r27", "r28", "r30", "r31", "r32", "r33",
              "r37", "r43", "r44", "r45", "r57"),
    "hypothetical": ("r09", "r20", "r23", "r24", "r42", "r51", "r55", "r61", "r62", "r63", "r64"),
    "nostalgia": ("r21", "r34", "r35", "r41", "r46", "r47", "r48", "r49", "r58", "r59", "r60", "r69"),
    "acknowledged_change": ("r15", "r22", "r29", "r36", "r38", "r39", "r40", "r50", "r52", "r54",
                            "r56", "r65"),
    "pressure_signal": ("r19", "r25", "r26", "r53", "r66", "r67", "r68", "r72", "r73", "r74",
                        "r75", "r76"),
}

# Hard negatives. Acknowledged change: the speaker names the change of mind themselves.
ACKNOWLEDGED_FRAMES = {
    "k01": "Correcting what I told you back in {anchor_month}: {neg}. Please update the account plan so nobody is surprised.",
    "k02": "I know I said the opposite before, so to be explicit — I've changed my mind: {neg}.",
    "k03": "Updating our earlier position on purpose: {neg}. That replaces what we said in {anchor_month}.",
    "k04": "You'll remember I was firm on this in {anchor_month}. I've reconsidered, and {neg} — please treat this as the new position.",
    "k05": "To retract our earlier position and avoid any confusion: {neg}.",
    "k06": "I'm changing my answer from {anchor_month}, knowingly: {neg}. Flagging it so the notes are right.",
    "k07": "Change of mind on our side, and we want it on the record: {neg}.",
    "k08": "Walking back my earlier comment — {neg}. I'll brief the team so everyone knows it changed.",
    "k09": "Earlier I told you otherwise; after talking it through with {colleague}, {neg}. This supersedes my previous note.",
    "k10": "I owe you a correction to my {anchor_month} message: {neg}.",
    "k11": "Please note the revision to our earlier answer: {neg}.",
    "k12": "I've decided to reverse course since we last discussed it, deliberately: {neg}.",
}

HYPOTHETICAL_FRAMES = {
    "h01": "If {cond}, {would} — but that's not where we are; {pos}.",
    "h02": "Half joking: if {cond}, {would}. Seriously though, {pos}.",
    "h03": "Purely hypothetically, {would} if {cond}. We're nowhere near that, and {pos}.",
    "h04": "Worst case, if {cond}, {would}. That's off the table — {pos}.",
    "h05": "{colleague} asked what we'd do if {cond}; I said {would}. It's a thought experiment — {pos}.",
    "h06": "Ha, if {cond} then sure, {would}. Until then {pos}, and I've told the team so.",
    "h07": "Imagine {cond} — then {would}. That's a what-if for the risk register; {pos}.",
    "h08": "Only if {cond} would we reconsider, and then {would}. Today {pos}.",
    "h09": "For the scenario plan: if {cond}, {would}. For the record, {pos}.",
    "h10": "Kidding aside, {pos}. The only world where {would} is one where {cond}.",
    "h11": "Someone joked that if {cond}, {would}. Funny, but {pos}.",
    "h12": "In theory, if {cond}, {would}; in practice {pos}.",
    "h13": "If {cond}, {would}. That hasn't happened, and {pos}.",
    "h14": "We've gamed it out: if {cond}, {would}. Right now {pos}.",
}

NOSTALGIA_FRAMES = {
    "n01": "{Nostalgia}.",
    "n02": "Funny thinking back — {nostalgia}.",
    "n03": "Sentimental moment: {nostalgia}.",
    "n04": "Just found an old deck from last year; {nostalgia}.",
    "n05": "{Nostalgia}. Good times, honestly, and no regrets now.",
    "n06": "Random memory while prepping the QBR: {nostalgia}.",
    "n07": "{colleague} and I were laughing about this — {nostalgia}.",
    "n08": "Looking back, {nostalgia}. Glad we're where we are now.",
    "n09": "Not that it matters anymore, but {nostalgia}.",
    "n10": "I miss the early days a bit; {nostalgia}.",
    "n11": "Not a complaint, just reminiscing after all this time: {nostalgia}.",
    "n12": "Feels like ages ago now, but {nostalgia}.",
    "n13": "{Nostalgia}. No regrets now.",
    "n14": "We've come a long way: {nostalgia}.",
    "n15": "Now that I think about it, {nostalgia}.",
    "n16": "{Nostalgia}. Those days won't come back, and that's fine.",
}

PRESSURE_FRAMES = {
    "p01": "{Pressure}.",
    "p02": "Worth knowing: {pressure}.",
    "p03": "Heads-up: {pressure}. Our plans are the same.",
    "p04": "Not a big deal, but {pressure}.",
    "p05": "{Pressure} — just so you're aware.",
    "p06": "Context for next week: {pressure}.",
    "p07": "Sharing for visibility: {pressure}.",
    "p08": "{colleague} mentioned that {pressure}; we can't do much about it and don't need to.",
    "p09": "Something I'm hearing internally: {pressure}.",
    "p10": "For your notes, {pressure}.",
    "p11": "Small thing: {pressure}.",
    "p13": "{Pressure}; no decisions from it, and we won't be rushed.",
    "p14": "Right now {pressure}. No action needed from you.",
    "p15": "{Pressure}, which has us busy but not worried.",
    "p16": "As of now, {pressure}; none of it is off the usual pattern.",
    "p12": "You may hear that {pressure}; nothing has been decided off the back of it, and that's expected this time of year.",
}

# Wrappers any look-alike turn may get (reversal or hard negative alike), so that openers and
# closers carry no label.
SHARED_PREFIXES = (
    "Quick update from our side:", "Honestly,", "For your notes:", "Heads-up before our next call:",
    "Context for next week:", "Sharing for visibility:", "For the record,", "One more thing:",
    "Before I forget:", "FYI:", "Following up on Tuesday:", "While I think of it,", "Small note:",
    "I wanted you to hear this from me:", "I'll be brief:", "Back from my week off:",
    "If you have a minute:", "I think you should know:", "Still on my list from Monday:",
)
SHARED_TAILS = (
    "Happy to talk it through.", "If you need anything from me, just ask.",
    "I'll loop in {colleague}.", "Still digesting the rest of the week.",
    "Let's cover it on the next call.", "No action needed today.",
    "We'll keep you posted.", "Thanks for understanding.", "More soon.",
    "I said the same to {colleague} this morning.", "Remember to add it to the notes.",
    "Nothing else has changed.",
    "I'll get back to you with dates.", "My inbox is a mess, so ping me if I miss something.",
    "What a week.", "I'm around all afternoon.", "Half the team already knows.",
    "That's all from our side for now.",
)

# Nostalgia clauses open with one of two retrospective markers; each is swapped for an
# equivalent so that no single phrase marks the family.
NOSTALGIA_OPENERS = {
    "I remember ": ("I remember ", "I think back to ", "I'll never forget ", "I recall ",
                    "I'm reminded of "),
    "back when ": ("back when ", "in the days when ", "years ago, when ", "at the start, when ",
                   "in our first year, when "),
}

# "still" marks re-affirmation too reliably: it is dropped from half of the pos / nostalgia
# clauses (every such clause reads correctly without it).
STILL_DROP_KINDS = ("pos", "nostalgia")

# Hard-negative family -> (frames, topic clause kind that the frame's main slot draws from)
HARD_NEGATIVE_FAMILIES = {
    "nostalgia": (NOSTALGIA_FRAMES, "nostalgia"),
    "acknowledged_change": (ACKNOWLEDGED_FRAMES, "neg"),
    "hypothetical": (HYPOTHETICAL_FRAMES, "would"),
    "pressure_signal": (PRESSURE_FRAMES, "pressure"),
}

REVERSAL_FAMILIES = ("direct", "drift_flip", "cross_channel")
