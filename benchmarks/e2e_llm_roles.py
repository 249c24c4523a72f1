"""End to end: flat-rag-llm on TWIST-CS (the default key) against the loopback server with the
scripted model (llm/scripted.py), twice, the second time from the response cache.

The server (LoopbackServer with twistbench.llm.scripted:respond_with_faults) runs in this
process and counts the requests it receives; the run meets 429s with Retry-After, 500s, replies
that are not JSON and replies cut off at the token limit, chosen by request hash. Steps, each a
`twist` command in a child process with TWIST_LLM_* pointing at the server and a fresh cache
and calibration folder:
  1. `twist judge calibrate --judge llm` (the scripted judge on every decoy; its record is
     stored where the runs find it);
  2. `twist run -s flat-rag-llm --judge llm -o OUT/first`;
  3. the same into OUT/second: every request must come from the cache.
Printed: per run the wall time, items, errors by kind and track, LLM requests, network calls,
cache hits, retries and tokens (from the manifest's llm_usage), and the chat requests the server
itself received during the run. The last line: `first: R requests, N network; second: cache hit H%,
network calls M`.

Run: .venv/bin/python benchmarks/e2e_llm_roles.py [--out DIR] [--port 18090] [--skip-calibrate]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from working_tree import child_env

from twistbench.llm.loopback import LoopbackServer
from twistbench.llm.scripted import respond_with_faults

TWIST = [sys.executable, "-m", "twistbench.cli"]


def summarize(folder: Path) -> dict:
    manifest = json.loads((folder / "manifest.json").read_text())
    records = [json.loads(x) for x in (folder / "items.jsonl").read_text().splitlines() if x]
    kinds = Counter((r["track"], r["error"]["kind"]) for r in records if r["error"])
    usage = manifest.get("llm_usage") or []
    total = {k: sum(u[k] for u in usage) for k in ("requests", "network_calls")}
    total["cache_hits"] = sum(u["cache"]["hits"] for u in usage)
    total["errors"] = Counter()
    total["retries"] = Counter()
    for u in usage:
        total["errors"].update(u["errors"])
        total["retries"].update(u["retries"])
    total["tokens"] = sum(u["tokens"]["prompt"] + u["tokens"]["completion"] for u in usage)
    return {"items": manifest["counts"]["items"], "item_errors": dict(kinds),
            "fingerprint": manifest["fingerprint"], **total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--port", type=int, default=18090)
    ap.add_argument("--skip-calibrate", action="store_true")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="twist-e2e-"))
    out.mkdir(parents=True, exist_ok=True)
    server = LoopbackServer(respond_with_faults, port=args.port).start()
    url = server.base_url
    # the children run in OUT: a relative PYTHONPATH would miss there (child_env)
    env = child_env(TWIST_LLM_BASE_URL=url, TWIST_LLM_MODEL="scripted",
                    TWIST_LLM_CACHE=str(out / "llm.sqlite3"),
                    TWIST_CALIBRATION_DIR=str(out / "calibration"),
                    TWIST_LLM_MAX_CONCURRENCY="8")
    try:
        if not args.skip_calibrate:
            t0 = time.perf_counter()
            cal = subprocess.run([*TWIST, "judge", "calibrate", "--judge", "llm"], env=env,
                                 capture_output=True, text=True, cwd=out)
            print(f"calibrate (exit {cal.returncode}, {time.perf_counter() - t0:.1f} s):")
            print("\n".join(line for line in cal.stdout.splitlines()
                            if line.startswith(("decoys", "calibration"))))
        runs = {}
        for name in ("first", "second"):
            t0, seen = time.perf_counter(), server.hits
            res = subprocess.run([*TWIST, "run", "-s", "flat-rag-llm", "--judge", "llm",
                                  "--no-progress", "-o", str(out / name)], env=env,
                                 capture_output=True, text=True, cwd=out)
            wall = time.perf_counter() - t0
            (out / f"{name}.txt").write_text(res.stdout + res.stderr)
            if not (out / name / "flat-rag-llm" / "manifest.json").exists():
                raise SystemExit(f"run {name} failed (exit {res.returncode}):\n{res.stderr}")
            runs[name] = summarize(out / name / "flat-rag-llm")
            s = runs[name]
            s["server_requests"] = server.hits - seen
            print(f"{name}: {wall:.1f} s wall, exit {res.returncode}, {s['items']} items, item "
                  f"errors {s['item_errors'] or 'none'}; LLM {s['requests']} requests, "
                  f"{s['network_calls']} network calls, {s['cache_hits']} cache hits, "
                  f"errors {dict(s['errors']) or 'none'}, retries "
                  f"{dict(s['retries']) or 'none'}, {s['tokens']} tokens; the server received "
                  f"{s['server_requests']} chat requests")
        first, second = runs["first"], runs["second"]
        hit = 100 * second["cache_hits"] / second["requests"] if second["requests"] else 0.0
        same = first["fingerprint"] == second["fingerprint"]
        print(f"profile of the first run: {out / 'first.txt'}; same fingerprint: {same}")
        print(f"first: {first['requests']} requests, {first['network_calls']} network; "
              f"second: cache hit {hit:.1f}%, network calls {second['network_calls']}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
