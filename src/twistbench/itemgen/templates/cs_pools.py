"""Slot pools for TWIST-CS. All names, companies and products are fictional."""

from __future__ import annotations

VENDOR = "Brightwell"
PRODUCT = "Brightwell Insights"

FIRST_NAMES = [
    "Dana", "Priya", "Marcus", "Elena", "Tomasz", "Aisha", "Kenji", "Lucia", "Owen", "Farah",
    "Mateo", "Ingrid", "Samuel", "Yara", "Declan", "Mei", "Rafael", "Nadia", "Jonah", "Beatriz",
    "Kwame", "Sofia", "Arjun", "Hannah", "Luca", "Zainab", "Erik", "Camila", "Theo", "Amara",
    "Viktor", "Leila", "Connor", "Rosa", "Hiroshi", "Esther", "Malik", "Greta", "Andre", "Noor",
    "Felix", "Imani", "Ravi", "Clara", "Diego", "Sunita", "Patrick", "Olga", "Emeka", "Julia",
    "Wen", "Maya", "Stefan", "Adaeze", "Gabriel", "Ines", "Tariq", "Freya", "Benedikt", "Chloe",
    "Kofi", "Marta", "Ibrahim", "Lena", "Rohan", "Astrid", "Nikhil", "Paloma", "Jasper", "Amina",
]

LAST_NAMES = [
    "Okafor", "Raman", "Lindqvist", "Moreau", "Kowalski", "Haddad", "Tanaka", "Ferreira", "Brennan",
    "Siddiqui", "Alvarez", "Johansson", "Mensah", "Costa", "Gallagher", "Zhou", "Navarro", "Petrova",
    "Whitfield", "Santos", "Boateng", "Romano", "Iyer", "Becker", "Rossi", "Abubakar", "Nilsson",
    "Herrera", "Quinn", "Adeyemi", "Novak", "Karimi", "Doyle", "Medina", "Sato", "Levin", "Osei",
    "Hartmann", "Dubois", "Rahman", "Fischer", "Mwangi", "Chandra", "Vogel", "Ortega", "Kapoor",
    "Byrne", "Sokolova", "Eze", "Marchetti", "Lin", "Castillo", "Weber", "Nwosu", "Pereira", "Ali",
    "Holm", "Varga", "Kimura", "Lund", "Achebe", "Barros", "Horvath", "Dalton", "Mishra", "Aydin",
]

# Customer accounts: (company, short id, industry)
CUSTOMERS = [
    ("Acme Logistics", "acme", "freight logistics"),
    ("Halvorsen Biotech", "halvorsen", "biotech research"),
    ("Kestrel Retail Group", "kestrel", "retail"),
    ("Orchard Health Partners", "orchard", "healthcare administration"),
    ("Tidewater Energy", "tidewater", "energy utilities"),
    ("Marigold Learning", "marigold", "online education"),
    ("Quarry Lane Insurance", "quarrylane", "insurance"),
    ("Fernhill Foods", "fernhill", "food manufacturing"),
]

COMPETITORS = [
    "Vantyx", "Cobaltline", "Northgrid", "Parallax Metrics", "Lumera", "Statwise", "Graphite Labs",
    "Ocelot Analytics", "Clearbeam", "Quantora", "Sightline BI", "Dataforge",
]

INTEGRATIONS = [
    "Salesforce", "HubSpot", "Snowflake", "BigQuery", "Zendesk", "Jira", "NetSuite", "Workday",
    "Databricks", "Redshift", "ServiceNow", "Marketo",
]

SSO_PROVIDERS = ["Okta", "Azure AD", "Google Workspace", "OneLogin", "Ping Identity", "JumpCloud"]

FEATURES = [
    "scheduled exports", "anomaly alerts", "custom roles", "the audit log", "embedded dashboards",
    "the forecasting module", "row-level permissions", "the sandbox environment",
    "usage analytics", "the mobile app", "data lineage views", "SCIM provisioning",
    "bulk user import", "the white-label portal", "drill-down reports", "Slack alerts",
]

# Singular on purpose: templates say "{legacy} is staying".
LEGACY_TOOLS = [
    "our old Tableau setup", "the Excel workbook system", "our in-house reporting tool", "Looker",
    "our Qlik setup", "the homegrown SQL reporting stack", "Power BI", "the legacy Cognos portal",
]

TEAMS = [
    "finance", "operations", "customer support", "marketing", "sales ops", "supply chain",
    "procurement", "HR", "field service", "product", "risk", "data engineering", "billing",
    "partner success",
]

REGIONS = ["EU", "UK", "Canadian", "Australian", "Swiss", "German"]
DC_CITIES = ["Frankfurt", "Dublin", "London", "Montreal", "Sydney", "Zurich", "Virginia", "Oregon"]

PRICES = [
    "$48k", "$62k", "$75k", "$84k", "$96k", "$110k", "$120k", "$135k", "$150k", "$180k", "$210k",
    "$240k",
]

PERCENTS = ["10%", "12%", "15%", "18%", "20%", "25%"]

QUARTERS = ["Q1", "Q2", "Q3", "Q4"]

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]

REPORTS = [
    "the weekly revenue report", "the churn dashboard", "the SLA report", "the inventory board",
    "the pipeline summary", "the board pack", "the margin report", "the utilisation dashboard",
    "the exec scorecard", "the regional sales view", "the cohort report", "the backlog tracker",
]

ERRORS = [
    "a 504 timeout", "a blank chart", "a permissions error", "a stale cache warning",
    "an 'invalid token' message", "duplicate rows", "a spinning loader that never finishes",
    "a CSV with broken encoding", "a missing column", "a 'quota exceeded' banner",
]

# Fictional street names for address plants; ZIP codes in the unused 000xx range.
STREETS = [
    "Juniper Hollow Road", "Larkspur Lane", "Copperleaf Avenue", "Thistledown Court",
    "Wrenfield Drive", "Saltmarsh Way", "Bramblewood Street", "Otter Creek Road", "Harrowgate Close",
    "Quillfeather Lane", "Mossbank Avenue", "Cinderpath Road",
]
TOWNS = ["Fairhaven", "Millbrook Falls", "Eastmere", "Glenrowan", "Port Avalon", "Cedarview",
         "Ashby Crossing", "Lowater"]
STATES = ["OR", "WA", "CO", "VT", "MN", "NC", "OH", "ME"]

# Reserved fictional phone range: 555-0100 .. 555-0199.
AREA_CODES = ["202", "212", "303", "312", "415", "503", "617", "720", "773", "919"]
EMAIL_DOMAINS = ["example.com", "example.org", "example.net", "mail.test", "home.invalid"]

ROLE_TITLES = {
    "csm": "Customer Success Manager",
    "ae": "Account Executive",
    "support_eng": "Support Engineer",
    "solutions_eng": "Solutions Engineer",
    "champion": "Customer champion (analytics lead)",
    "economic_buyer": "Economic buyer (VP Finance / COO)",
    "admin": "Platform admin (IT)",
    "end_user": "End user",
}
VENDOR_ROLES = ("csm", "ae", "support_eng", "solutions_eng")
CUSTOMER_ROLES = ("champion", "economic_buyer", "admin", "end_user", "end_user", "end_user")

# Voice: each person gets a stable subset of these for background traffic.
OPENERS = [
    "", "", "Hi all,", "Morning!", "Quick one:", "Hey team,", "FYI,", "Hi folks —",
    "Following up:", "Okay,", "So,", "Heads up:", "Thanks everyone.", "Hello,", "Right,",
]
SIGNOFFS = [
    "Best,", "Thanks,", "Cheers,", "Kind regards,", "Many thanks,", "Talk soon,", "All the best,",
    "Thanks so much,", "Regards,", "Speak soon,",
]
ACKS = [
    "Thanks, noted.", "Got it, thank you.", "Appreciate the heads-up.", "Understood — thanks.",
    "Thanks for letting us know.", "Noted, thank you.", "Makes sense, thanks.", "Okay, thanks.",
    "Thanks, that's helpful.", "Good to know.", "Thanks for the update.", "Copy that.",
]
