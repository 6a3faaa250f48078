"""Benchmark: goldmine's starter set beside the samplers query sets are built with today.

    .venv/bin/python bench/bench_starter.py [--queries 3000] [--seeds 5] [--sizes 25,50,100]

OpenSearch's relevance workbench builds query sets by random sampling, top-N (the most frequent)
and probability-proportional-to-size sampling (PPTSS, by events, without replacement). Each is
set beside `goldmine gold starter` (``goldset.starter.plan``: what it would add, nothing
written) at n = 25, 50 and 100 on two kinds of traffic, triaged by goldmine (onnx-int8 backend):

- **banking77** (``--queries`` texts of its train split per seed) as a search log: each text gets
  a Zipf volume (1000 / rank, at least 1, ranks shuffled by the seed), one event per search;
  a seeded fifth of the 77 intents are content gaps (80% of their searches return nothing,
  the rest 10% no click), so failures gather by intent as they do on a real site. The intent
  labels are never shown to the starter or triage; they only score the sets.
- **the TREC 2012 Session Track** as a search log (tests/helpers.py ``trec_session_track_jsonl``):
  real sessions, clicks and reformulations; a query's intent is its session's topic. Its traffic is
  fixed, so seeds vary only the samplers and the starter's tie-break seed.

Scored per set: distinct intents covered; the share of events, and of failed events, whose
triage cluster (a query with none is its own) holds a pick; awkward tags covered (of those the
traffic has). Printed: medians over seeds per method, and goldmine's margin over each sampler.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from goldmine.goldset.starter import AWKWARD_TAGS, plan  # noqa: E402
from goldmine.store import open_store  # noqa: E402
from goldmine.text import normalize_query  # noqa: E402

from helpers import trec_session_track_jsonl, write_jsonl  # noqa: E402
from realdata import shared_path  # noqa: E402

METHODS = ("goldmine", "random", "top-N", "PPTSS")
FIGURES = ("intents", "traffic", "failing", "tags")
GAP_SHARE, GAP_FAIL, OTHER_FAIL = 0.2, 0.8, 0.1


def goldmine(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "goldmine", *args], capture_output=True, text=True, cwd=ROOT
    )
    if done.returncode:
        sys.exit(f"goldmine {' '.join(args)} failed:\n{done.stderr}")


def banking77_log(path: Path, out: Path, n_queries: int, seed: int) -> dict[str, str]:
    """A search log of ``n_queries`` banking77 texts with Zipf volumes; returns norm -> intent."""
    with path.open(newline="") as f:
        rows = [(r["text"], r["category"]) for r in csv.DictReader(f)]
    rng = np.random.default_rng(seed)
    chosen = [rows[i] for i in rng.choice(len(rows), n_queries, replace=False)]
    intents = sorted({c for _, c in rows})
    gaps = set(rng.choice(intents, round(len(intents) * GAP_SHARE), replace=False).tolist())
    ranks = rng.permutation(n_queries) + 1
    events, labels = [], {}
    for (text, intent), rank in zip(chosen, ranks, strict=True):
        labels.setdefault(normalize_query(text), intent)
        fail = GAP_FAIL if intent in gaps else OTHER_FAIL
        for _ in range(max(1, round(1000 / rank))):
            k = len(events)
            failed = rng.random() < fail
            zero = failed and intent in gaps
            events.append(
                {
                    "event_id": f"e{k}",
                    "timestamp": f"2026-11-{1 + k % 28:02d}T{k % 24:02d}:{k % 60:02d}:00",
                    "session_id": f"s{k}",
                    "query": text,
                    "results": [] if zero else ["d1", "d2", "d3"],
                    "clicks": [] if failed else ["d1"],
                }
            )
    write_jsonl(out, events)
    return labels


def session_track_log(xml: Path, out: Path) -> dict[str, str]:
    """The Session Track as a search log; returns norm -> its sessions' most common topic."""
    import xml.etree.ElementTree as ET

    trec_session_track_jsonl(xml, out)
    seen: dict[str, Counter] = {}
    for session in ET.parse(xml).getroot().iter("session"):
        topic = session.find("topic").get("num")
        for inter in session.iter("interaction"):
            norm = normalize_query(inter.findtext("query") or "")
            seen.setdefault(norm, Counter())[topic] += 1
    return {norm: c.most_common(1)[0][0] for norm, c in seen.items()}


def triaged(log: Path, db: Path) -> None:
    goldmine("--db", str(db), "ingest", "searchlog", str(log))
    goldmine("--db", str(db), "triage", "run", "--backend", "onnx-int8")


def queries(db: Path) -> dict[str, np.ndarray | list]:
    with open_store(db) as con:
        rows = con.execute(
            """SELECT norm_query, coalesce(CAST(cluster_id AS VARCHAR), 'q:' || norm_query),
                      n_events, n_failed, coalesce(tags, []) FROM triage_queries
               ORDER BY norm_query"""
        ).fetchall()
    return {
        "norm": [r[0] for r in rows],
        "ckey": [r[1] for r in rows],
        "events": np.array([r[2] for r in rows], dtype=float),
        "failed": np.array([r[3] for r in rows], dtype=float),
        "tags": [set(r[4]) for r in rows],
    }


def samples(q: dict, n: int, seed: int) -> dict[str, list[int]]:
    """Row indexes each sampler picks."""
    rng = np.random.default_rng(seed)
    size = len(q["norm"])
    # Top-N: the most frequent, ties in a seeded order (as a sort of equal counts would be).
    order = np.lexsort((rng.random(size), -q["events"]))
    return {
        "random": rng.choice(size, n, replace=False).tolist(),
        "top-N": order[:n].tolist(),
        "PPTSS": rng.choice(size, n, replace=False, p=q["events"] / q["events"].sum()).tolist(),
    }


def score(q: dict, picks: list[int], labels: dict[str, str]) -> dict[str, float]:
    picked = {q["ckey"][i] for i in picks}
    hit = np.array([k in picked for k in q["ckey"]])
    present = set().union(*q["tags"]) & set(AWKWARD_TAGS)
    return {
        "intents": len({labels[q["norm"][i]] for i in picks if q["norm"][i] in labels}),
        "traffic": q["events"][hit].sum() / q["events"].sum(),
        "failing": q["failed"][hit].sum() / max(q["failed"].sum(), 1),
        "tags": len(present & set().union(*(q["tags"][i] for i in picks))),
        "tags_present": len(present),
    }


def measure(db: Path, labels: dict[str, str], sizes: list[int], seed: int) -> dict:
    q = queries(db)
    index = {norm: i for i, norm in enumerate(q["norm"])}
    out: dict = {}
    for n in sizes:
        with open_store(db) as con:
            picks, _ = plan(con, n, seed=seed)
        sets = {"goldmine": [index[p.query["norm_query"]] for p in picks], **samples(q, n, seed)}
        out[n] = {m: score(q, rows, labels) for m, rows in sets.items()}
    return out


def report(name: str, runs: list[dict], sizes: list[int]) -> dict:
    """Medians over seeds per method and size, printed with goldmine's margin over each."""
    summary: dict = {}
    print(f"\n== {name}: medians over {len(runs)} seed(s)")
    print(f"{'n':>4} {'method':<9} {'intents':>8} {'traffic':>8} {'failing':>8} {'tags':>6}")
    for n in sizes:
        summary[n] = {}
        for m in METHODS:
            med = {f: statistics.median(r[n][m][f] for r in runs) for f in FIGURES}
            tags_present = statistics.median(r[n][m]["tags_present"] for r in runs)
            summary[n][m] = med
            print(
                f"{n:>4} {m:<9} {med['intents']:>8.1f} {med['traffic']:>8.1%} "
                f"{med['failing']:>8.1%} {med['tags']:>3.0f}/{tags_present:.0f}"
            )
        for m in METHODS[1:]:
            # Same-run margins: per seed, goldmine minus the sampler, then the median.
            d = {
                f: statistics.median(r[n]["goldmine"][f] - r[n][m][f] for r in runs)
                for f in ("intents", "failing")
            }
            # A median margin hides a seed it lost: how many seeds goldmine was strictly ahead.
            ahead = sum(r[n]["goldmine"]["intents"] > r[n][m]["intents"] for r in runs)
            print(f"     goldmine - {m:<7} intents {d['intents']:+.1f} (ahead in {ahead} of "
                  f"{len(runs)} seeds), failing traffic {d['failing']:+.1%}")  # fmt: skip
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=3000, help="banking77 texts per seed")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--sizes", default="25,50,100")
    ap.add_argument("--json", type=Path, help="also write the medians here")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    banking = shared_path("datasets", "banking77", "train.csv")
    xml = shared_path("datasets", "trec_session_track", "sessiontrack2012.xml")
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if banking.exists():
            runs = []
            for seed in range(args.seeds):
                log, db = work / f"b77_{seed}.jsonl", work / f"b77_{seed}.duckdb"
                labels = banking77_log(banking, log, args.queries, seed)
                triaged(log, db)
                runs.append(measure(db, labels, sizes, seed))
            out["banking77"] = report(f"banking77, {args.queries} queries", runs, sizes)
        else:
            print(f"skipped banking77: {banking} is absent")
        if xml.exists():
            log, db = work / "st.jsonl", work / "st.duckdb"
            labels = session_track_log(xml, log)
            triaged(log, db)
            runs = [measure(db, labels, sizes, seed) for seed in range(args.seeds)]
            out["session_track"] = report("TREC 2012 Session Track (topics)", runs, sizes)
        else:
            print(f"skipped the Session Track: {xml} is absent")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
