"""Keeping the answer key honest (whitepaper §6.1): blind double annotation, agreement,
adjudication, and the next key version.

- `labels`: what an annotator answers per track: the label choices with their written
  definitions, and how the key's gold maps onto them (never shown to the annotator).
- `excerpts`: the record as an annotator sees it: the item's turns in context, with
  look-alike turns chosen by word overlap so the key's evidence is not pointed at.
- `packet`: `twist annotate export`: one blind packet per annotator (JSONL, CSV, an offline HTML
  form, the guide, the full records), shuffled with a recorded seed; the coordinator keeps the
  manifest (codes, seeds, gold).
- `answers`: reading an annotator's answers (CSV, or the form's JSON), refusing wrong keys,
  other annotators' packets, missing or duplicate items and unknown labels.
- `agreement`: `twist annotate agreement`: Cohen's (two) or Fleiss' (more) kappa, raw agreement,
  confusion tables per track and family with cluster-bootstrap intervals; the adjudication queue.
- `adjudicate`: `twist annotate adjudicate`: the adjudicator's decisions and the family threshold
  become the next key version (datasets/versions.py).
"""
