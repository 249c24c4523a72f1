"""Reports: the TWIST profile (profile.py), its Markdown/JSON renderings (render.py), re-scoring
saved runs (runs.py) and paired comparison of two runs (compare.py)."""
