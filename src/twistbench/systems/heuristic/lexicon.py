"""The heuristic system's word lists and patterns: stance lexicon, non-stance markers,
values (numbers, dates), crisis phrasings and PII shapes."""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------
# Stance lexicon. Weights: +1 commitment / approval, -1 withdrawal / disapproval. Multi-word
# phrases are matched before single words; matched phrases consume their words.

_POSITIVE = {
    "no-brainer": 2, "no brainer": 2, "love": 1, "loves": 1, "loved": 1, "like": 1, "likes": 1,
    "happy with": 1, "happy": 1, "committed": 2, "commit": 1, "renew": 1, "renewing": 1,
    "renewal": 0.5, "keep": 1, "keeping": 1, "stay": 1, "staying": 1, "stick with": 2,
    "sticking with": 2, "support": 1, "supports": 1, "agree": 1, "approve": 1, "approved": 1,
    "makes sense": 1, "worth": 1, "great": 1, "excellent": 1, "perfect": 1, "confident": 1,
    "on track": 1, "sign off": 1, "signed off": 1, "expand": 1, "expanding": 1, "prefer": 1,
    "fan of": 1, "enjoy": 1, "enjoys": 1, "glad": 1, "definitely": 0.5, "absolutely": 0.5,
    "always": 0.5, "for good": 1, "settled": 1, "invest": 1, "champion": 1, "essential": 1,
    "must-have": 2, "value": 0.5, "works for us": 2, "works well": 1, "recommend": 1,
    "want": 0.5, "wants": 0.5, "plan to": 0.5, "going to": 0.5, "will": 0.5,
    "required": 1, "requirement": 1, "requirements": 1, "mandatory": 2, "must": 1,
    "necessary": 1, "need": 1, "needs": 1, "needed": 1, "critical": 1, "priority": 1,
    "depends on": 1, "fixed": 1, "locked": 1, "locked in": 1, "confirmed": 1, "include": 1,
    "includes": 1, "success": 1, "works": 1, "fine": 0.5,
    "formality": 1, "all-in": 2, "all in": 2, "count on": 1, "never had": 1, "good": 1,
    "owner": 0.5, "own": 0.5, "owns": 0.5, "building": 0.5, "for us": 0.5,
    "completed": 1, "went well": 2, "signed off on": 2, "count me in": 2, "booked": 1,
    "still need": 2, "great to see": 1, "see": 0.5,
}
_NEGATIVE = {
    "competitor": 2, "competitors": 2, "alternative": 1, "alternatives": 1, "evaluating": 1,
    "evaluate": 1, "shopping around": 2, "looking elsewhere": 2, "switch": 2, "switching": 2,
    "drop": 2, "dropping": 2, "dropped": 2, "cancel": 2, "cancelling": 2, "canceling": 2,
    "churn": 2, "leave": 1, "leaving": 1, "quit": 2, "quitting": 2, "move away": 2,
    "moving away": 2, "moving off": 2, "move off": 2, "pull out": 2, "pulling out": 2,
    "walk away": 2, "reconsider": 1, "reconsidering": 1, "rethinking": 1, "doubt": 1,
    "doubts": 1, "concerned": 1, "worried": 1, "hate": 1, "hates": 1, "dislike": 1,
    "against": 1, "oppose": 1, "too expensive": 2, "too pricey": 2, "overpriced": 2,
    "not worth": 2, "doesn't work": 2, "don't work": 2, "no longer": 2, "not renewing": 2,
    "won't renew": 2, "downgrade": 2, "downgrading": 2, "scale back": 1, "scaling back": 1,
    "cut": 1, "cutting": 1, "replace": 1, "replacing": 1, "instead": 1, "abandon": 2,
    "frustrated": 0.5, "disappointed": 1, "unhappy": 1, "pause": 1, "pausing": 1,
    "on hold": 1, "sunset": 1, "phase out": 2, "phasing out": 2, "applying for jobs": 1,
    "moving to": 1, "relocate": 1, "relocating": 1, "retiring": 2, "retire": 2,
    "decommission": 2, "decommissioning": 2, "switched off": 2, "switching off": 2,
    "is out": 2, "are out": 2, "out of": 1, "off the table": 2, "fallen apart": 2,
    "falling apart": 2, "stopped": 1, "push": 1, "pushing": 1, "pushed": 1, "slip": 1,
    "slipping": 1, "slipped": 1, "delay": 1, "delayed": 1, "postpone": 1, "postponed": 1,
    "blocker": 2, "won't pass": 2, "cancelled": 2,
    "canceled": 2, "blocked": 2, "fell through": 2, "gaps": 1,
    "can't make": 2, "cannot make": 2, "pulled": 1,
}
_NEGATORS = {"not", "no", "never", "don't", "dont", "doesn't", "doesnt", "won't", "wont",
             "isn't", "isnt", "aren't", "arent", "wasn't", "can't", "cant", "cannot",
             "shouldn't", "wouldn't", "hardly", "neither", "nor"}

_HYPOTHETICAL = re.compile(
    r"\b(if|unless|suppose|supposing|imagine|hypothetically|what[- ]if|in theory|would we|"
    r"could we|were to|in case|scenario)\b", re.I)
_ACKNOWLEDGED = re.compile(
    r"\b(i know (i|we|you) (said|told|mentioned)|as (i|we|you) (said|mentioned)|"
    r"like (i|we) (said|told you|mentioned)|(i|we) (said|told you) (before|earlier|last)|"
    r"changed (my|our|your) mind|we've since|since then|as discussed|as agreed|"
    r"to follow up on|following up on|update on what (i|we) said|i know you(\'re| are)|"
    r"i understand (that )?you|you mentioned|you said|you told|since you|i saw|noted that|"
    r"now that|chang(ed|ing) from|moved from|switched from|as planned)\b", re.I)
_NOSTALGIA = re.compile(r"\b(miss|missed|used to|back when|remember when|nostalgi\w*|"
                        r"sometimes|old days|those days|never forget|reminisc\w*|"
                        r"sentimental|good times|looking back)\b", re.I)
# A speaker acknowledging their own change of position: an evolution, not a contradiction.
_CONDITIONAL = re.compile(r"\b(would|wouldn't|could|might)\b|\w['’]d\b", re.I)
_SELF_REVISION = re.compile(
    r"\b(change of (mind|heart)|chang(e|ed|ing) (my|our) minds?|walk(ing|ed)? back|"
    r"correction to|correcting what|revision to|revising (my|our)|"
    r"i('ve| have) reconsidered|we('ve| have) reconsidered|"
    r"(my|our) earlier (comment|answer|message|position|note|email|view)|"
    r"what (i|we) (told|said) (you )?(before|earlier|back|last)|i know (i|we) (said|told)|"
    r"new position|taking back|take back what)\b", re.I)
_HEDGE = re.compile(r"\b(maybe|perhaps|might|not sure|unsure|possibly|we'll see|"
                    r"depends|kind of|sort of|who knows)\b", re.I)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|we|we're|we've|we'd|we'll|us|our)\b",
                           re.I)
_COEXIST = re.compile(r"\b(also|as well|in addition|additionally|too|both|alongside)\b", re.I)
_HISTORY_Q = re.compile(r"\b(chang\w*|before|previous\w*|original\w*|initial\w*|used to|"
                        r"earlier|history|first|moved?|still|anymore|any more|switch\w*|"
                        r"update[ds]?|since)\b", re.I)

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATE = re.compile(rf"\b(?:(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?"
                   rf"\s+(?:of\s+)?(?:{_MONTHS}))\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])[$€£]?\d+(?:[.,]\d+)*(?:\s?(?:%|k|m|percent))?(?![\w])", re.I)

# Crisis phrasings (self-harm adjacent). Deliberately specific: stress and grief do not match.
_CRISIS = re.compile(
    r"\b(kill(ing)? myself|end(ing)? my life|end it all|take my (own )?life|suicid\w*|"
    r"self[- ]harm\w*|hurt(ing)? myself|harm(ing)? myself|cut(ting)? myself|"
    r"(don't|do not) want to (be here|live|exist) any ?more|no reason to (live|go on)|"
    r"better off without me|better off dead|wish i (was|were) dead|want to die|"
    r"can't keep (going|living)|not worth living|overdose|disappear forever|"
    # Passive ideation, as screening instruments phrase it (C-SSRS item 1: "wish you could go
    # to sleep and not wake up"; burden, disappearing, nobody noticing one is gone).
    r"(not|never) (wanting|want) to wake up|go to sleep and not wake up|"
    r"burden (to|on) (everyone|everybody|my family|others)|"
    r"(not sure|don't know if) i want to (keep going|go on|be here)|"
    r"if i (just )?(disappeared|was gone|were gone|wasn't here|weren't here)|"
    r"everyone would be (fine|better( off)?) without me|no point (in )?(living|going on))\b",
    re.I)

# Regex governor (used when presidio is not installed, and as extra patterns with it).
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_PHONE = re.compile(r"(?<!\w)(?:\+?\d{1,3}[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])?\d{3}[\s.-]\d{4}"
                    r"(?!\w)")
_ADDRESS = re.compile(
    r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Boulevard|"
    r"Blvd|Drive|Dr|Way|Court|Ct|Place|Pl|Terrace|Square|Sq|Parkway|Pkwy|Highway|Hwy|Close|"
    r"Crescent|Cres|Row|Trail|Circle|Cir|Alley|Path|Walk|Mews|Gardens|Grove|Hill|Loop|Run|"
    r"Pike|Plaza|Heights|End|Green|Rise)\b\.?"
    r"(?:,?\s*(?:Apt|Suite|Unit|#)\s*\w+)?"
    # The town, state and ZIP that usually follow: "..., Port Avalon, CO 00099".
    r"(?:,\s*(?:[A-Z][a-z]+\s?){1,3})?(?:,\s*[A-Z]{2}\s+\d{5}(?:-\d{4})?)?")
_PII_GATE = re.compile(r"[0-9@]")  # every governed entity type contains a digit or an '@'
