"""Defaults the `twist` command shows in its --help, in a module that imports nothing.

Typer needs an option's default when it builds the command line, that is at every start-up
(`twist --help` included); the modules that use these values import numpy, pydantic or an HTTP
client, so the values live here and those modules re-export them (`stats.TIAP_RESAMPLES` is this
`TIAP_RESAMPLES`). Change a value here, never in a copy.
"""

from __future__ import annotations

# TIAP §4: 3,000 paired resamples, percentile CI, seed 1337 (stats.py re-exports both).
TIAP_BOOTSTRAP_SEED = 1337
TIAP_RESAMPLES = 3000
# The judge of free-text answers and the answerer of recalled memories (judges/, answerers/).
DEFAULT_JUDGE = "structural"
DEFAULT_ANSWERER = "extractive"
# Largest output of one system call, as JSON (runs/guard.py).
DEFAULT_MAX_OUTPUT_BYTES = 1_000_000
# Smallest Fleiss' kappa an annotated key passes with (annotate/agreement.py).
DEFAULT_MIN_KAPPA = 0.8
