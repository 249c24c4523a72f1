"""TIAP, the scoring-target audit of saved retrieval traces (tiap-paper.md).

Plain functions behind the CLI:
- `write_traces(system, dataset, out_dir, k=60)`  -> `twist trace` (traces, lineage, gold)
- `audit(traces, lineage, gold, out_dir, ...)`     -> `twist audit`
- `native_matrix(locomo_path, out_dir, ...)`       -> `twist audit native`
- `render_audit_markdown(result)`                        -> the Markdown report (audit.md)

Modules: traces (file formats, TREC export), targets (Raw / Source / Canonical, vectorised),
metrics (Recall@k, MRR, nDCG@k), stats (bootstrap, Fleiss' kappa), contested (contested
credits and rater labels), core (the audit), report (Markdown), tracing (`twist trace`),
native (the LoCoMo native run matrix).
"""

from twistbench.audit.core import AuditResult, audit, audit_runs, export_trec_files
from twistbench.audit.metrics import METRICS, VARIANTS, TraceScores, rescore
from twistbench.audit.native import NativeResult, NativeStore, native_matrix
from twistbench.audit.report import render_audit_markdown
from twistbench.audit.targets import TARGETS
from twistbench.audit.tracing import TraceReport, write_traces

__all__ = [
    "METRICS", "TARGETS", "VARIANTS", "AuditResult", "NativeResult", "NativeStore", "TraceScores",
    "TraceReport", "audit", "audit_runs", "export_trec_files", "native_matrix",
    "render_audit_markdown", "rescore", "write_traces",
]
