"""Checks of a dataset: is every item measuring what it claims to? The separability audit
(separability.py) and the shortcut audit battery (shortcuts.py, with features, baselines and
report)."""
