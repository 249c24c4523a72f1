"""Template data for the TWIST-CS generator (itemgen/cs_workspace.py).

Plain data modules, no logic beyond small helpers:
- cs_pools: names, companies, products, slot value pools;
- cs_background: everyday work traffic (Slack threads, emails, calls);
- cs_tension: Track A topics (anchor / drift / reversal / hard-negative phrasings) and frames;
- cs_drafts: Track B record scenarios and drafts;
- cs_chains: Track C update-chain subjects;
- cs_safety: Track D PII plants and emotional hard negatives;
- cs_crisis_optin: Track D crisis phrasings. OPT-IN, content warning; imported only when a build
  asks for crisis plants (`--include-crisis`).

Templates use str.format slots ("{competitor}"); every slot a template names must be filled.
"""
