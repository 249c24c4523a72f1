"""Values for slots: Track A arc slots, Track C value kinds, Track D contact details.

Every value comes from pools.toml through a seeded Random; `ValueSource` keeps values unique
where the gold needs them unique (a chain's states, a workspace's people and contacts).
"""

from __future__ import annotations

import random
import re
from datetime import date, timedelta
from typing import Any

from twistbench.itemgen.cs2.text import spell_digits, spell_email
from twistbench.itemgen.cs2.world import MONTHS, WEEKDAYS, Person, Workspace

PHONE_GROUPS = (3, 3, 4)


def month_after(d: date, rng: random.Random, lo: int = 2, hi: int = 4) -> str:
    """A month name lo..hi months after d."""
    k = d.month - 1 + rng.randint(lo, hi)
    return MONTHS[k % 12]


def quarter_after(d: date, rng: random.Random) -> str:
    """A quarter label that starts after d (named without a year, as people say it)."""
    q = (d.month - 1) // 3 + rng.randint(2, 3)
    return f"Q{q % 4 + 1}"


def date_text(d: date) -> tuple[str, list[str]]:
    month = MONTHS[d.month - 1]
    return f"{month} {d.day}", [f"{d.day} {month}", f"{month[:3]} {d.day}"]


class ValueSource:
    """Fresh values of a kind, unique within what `taken` holds."""

    def __init__(self, pools: dict[str, Any], spare_first: list[str], last: list[str]):
        self.values = pools["values"]
        self.contact = pools["contact"]
        self.spare_first = spare_first
        self.last = last

    def arc_slots(self, rng: random.Random, ws: Workspace, speaker: Person, last_day: date,
                  colleague_first: str, vendor: dict[str, str]) -> dict[str, str]:
        """Slot values for one Track A arc (or one distractor stance line)."""
        v = self.values
        return {
            "price": rng.choice(v["price"]), "competitor": rng.choice(v["competitor"]),
            "sso": rng.choice(v["sso"]), "integration": rng.choice(v["integration"]),
            "legacy": rng.choice(v["legacy"]), "feature": rng.choice(v["feature"]),
            "team": rng.choice(v["team"]), "pct": rng.choice(v["pct"]),
            "region": rng.choice(v["region"]), "report": rng.choice(v["report"]),
            "day": rng.choice(WEEKDAYS), "n": str(rng.randint(5, 40)),
            "month": month_after(last_day, rng), "quarter": quarter_after(last_day, rng),
            "colleague": colleague_first, "company": ws.company, "vendor": vendor["name"],
            "product": vendor["product"],
        }

    def value(self, kind: str, rng: random.Random, ws: Workspace, taken: set[str],
              min_day: date | None = None, max_day: date | None = None
              ) -> tuple[str, list[str]]:
        """A fresh value of a Track C kind with its accepted variants. Dates fall in
        [min_day, max_day]. Values a chain of this workspace already holds (ws.reserved) are
        avoided while others are left, so that a later mention of a chain's value is about
        that chain (the recency baselines must not be helped or hurt by chance)."""
        v = self.values
        for attempt in range(500):
            if kind == "seats":
                n = rng.randrange(20, 600, 5)
                val, var = f"{n} seats", [str(n)]
            elif kind == "date":
                lo = min_day or ws.start.date()
                hi = max(max_day or lo + timedelta(days=120), lo + timedelta(days=7))
                d = lo + timedelta(days=rng.randint(0, (hi - lo).days))
                while d.weekday() >= 5:
                    d += timedelta(days=1)
                val, var = date_text(d)
            elif kind == "person":
                first = rng.choice(self.spare_first)
                val, var = f"{first} {rng.choice(self.last)}", [first]
                if any(val.split()[0] == t.split()[0] for t in taken):
                    continue
            elif kind == "weekday":
                val = rng.choice(WEEKDAYS)
                var = [val + "s"]
            elif kind == "money":
                k = rng.randrange(12, 240, 2)
                val, var = f"${k},000", [f"${k}k", f"{k},000", f"{k}k"]
            elif kind == "po":
                n = rng.randint(10000, 99999)
                val, var = f"PO-{n}", [str(n)]
            elif kind == "city":
                val, var = rng.choice(v["city"]), []
            elif kind in ("cadence", "timezone", "duration", "currency"):
                val, var = rng.choice(v[kind])
                var = list(var)
            else:
                raise ValueError(f"unknown value kind {kind!r}")
            if val not in taken and (attempt >= 300 or val not in ws.reserved):
                taken.add(val)
                return val, var
        raise RuntimeError(f"value pool exhausted for {kind}")

    # -- Track D -----------------------------------------------------------------------------

    def personal_phone(self, rng: random.Random, taken: set[str]) -> tuple[str, str]:
        """(value as written, the same digits spelled out)."""
        for _ in range(500):
            area = rng.choice(self.contact["area_codes"])
            last4 = f"01{rng.randint(0, 99):02d}"
            val = f"({area}) 555-{last4}"
            if val not in taken:
                taken.add(val)
                return val, spell_digits(f"{area}555{last4}", PHONE_GROUPS)
        raise RuntimeError("phone numbers exhausted")

    def personal_email(self, rng: random.Random, owner: Person, taken: set[str]
                       ) -> tuple[str, str]:
        first, last = (re.sub(r"[^a-z]", "", s.lower()) for s in owner.name.split(maxsplit=1))
        for _ in range(500):
            style = rng.randrange(3)
            local = (f"{first}.{last}{rng.randint(1, 9)}" if style == 0 else
                     f"{first[0]}{last}{rng.randint(1, 9)}" if style == 1 else f"{first}{last}")
            val = f"{local}@{rng.choice(self.contact['personal_domains'])}"
            if val not in taken:
                taken.add(val)
                return val, spell_email(val)
        raise RuntimeError("e-mail addresses exhausted")

    def home_address(self, rng: random.Random, taken: set[str]) -> str:
        c = self.contact
        for _ in range(500):
            val = (f"{rng.randint(3, 980)} {rng.choice(c['streets'])}, {rng.choice(c['towns'])}, "
                   f"{rng.choice(c['states'])} 000{rng.randint(10, 99)}")
            if val not in taken:
                taken.add(val)
                return val
        raise RuntimeError("addresses exhausted")

    def business_phone(self, rng: random.Random, taken: set[str]) -> str:
        for _ in range(500):
            val = f"+1 ({rng.choice(self.contact['area_codes'])}) 555-01{rng.randint(0, 99):02d}"
            if val not in taken and val.removeprefix("+1 ") not in taken:
                taken.add(val)
                return val
        raise RuntimeError("phone numbers exhausted")

    def office_address(self, rng: random.Random, taken: set[str]) -> str:
        c = self.contact
        for _ in range(500):
            val = (f"{rng.randint(10, 990)} {rng.choice(c['office_streets'])}, "
                   f"{rng.choice(c['towns'])}, {rng.choice(c['states'])} 000{rng.randint(10, 99)}")
            if val not in taken:
                taken.add(val)
                return val
        raise RuntimeError("addresses exhausted")
