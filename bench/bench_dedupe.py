"""Fuzzy dedupe as the traffic grows: today's (blocks of common words split by a second key,
_split_big; at most MAX_CHECKS word-rule checks per query) against the dedupe before them (whole
blocks, every candidate checked), on the same generated queries in the same run.

    .venv/bin/python bench/bench_dedupe.py                 # 50k, 100k, 200k queries
    .venv/bin/python bench/bench_dedupe.py --scales 400000 --repeats 1
    .venv/bin/python bench/bench_dedupe.py --scales 50000,100000,200000,400000 --no-before

Per scale: the largest block and the sum of squared block sizes per query (what the pairwise
cdist inside blocks costs; flat is linear), the seconds of ``best_partners`` over every query
(what a first triage run does; medians of ``--repeats``, the two alternated), the ratio, the
CPU microseconds per query and the growth (each variant's CPU time over the previous scale's:
2.0 for twice the queries is linear; CPU time, since wall time on a loaded machine is mostly
waiting), and the share of the partners before that today's finds (the
same partner for the same query). ``--no-before`` times today's alone (no ratio, no share).
Queries: ``bench_triage.generate_traffic`` (real seed queries from ../shared/datasets with
word-level variants and a Zipf-like pick of the seed), ranked in generation order.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_triage import generate_traffic  # noqa: E402

from goldmine.text import normalize_query  # noqa: E402
from goldmine.triage import dedupe  # noqa: E402

UNSPLIT = 10**12
BEFORE = (UNSPLIT, UNSPLIT)  # (split_at, max_checks): whole blocks, every candidate checked
TODAY = (dedupe.SPLIT_AT, dedupe.MAX_CHECKS)


def partners(texts: list[str], split_at: int, max_checks: int) -> tuple[float, float, dict, list]:
    """Seconds, CPU seconds (this process's threads), the best partners of every query, and the
    blocks. On a machine others load, the CPU seconds are the work; the seconds, its wait too."""
    for cache in (dedupe._word_set, dedupe._digits, dedupe.near_spelling):
        cache.cache_clear()  # each variant starts as a run would
    start, cpu = time.perf_counter(), time.process_time()
    blocked = dedupe.block_table(texts, split_at)
    every = list(range(len(texts)))
    best = dedupe.best_partners(every, texts, None, blocked, max_checks)
    return time.perf_counter() - start, time.process_time() - cpu, best, blocked[0]


def block_sizes(blocks: list, n: int) -> str:
    sizes = np.array([len(b) for b in blocks], dtype=np.int64)
    return f"{sizes.max():,}/{(sizes**2).sum() / n:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="50000,100000,200000")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-before", action="store_true", help="time today's dedupe alone")
    args = parser.parse_args()
    variants = [TODAY] if args.no_before else [BEFORE, TODAY]
    print(f"{'queries':>9} {'largest/sum b2 per q':>24} {'before s':>9} {'today s':>8} "
          f"{'ratio':>6} {'CPU us/query':>13} {'CPU growth':>11} {'same partner':>13}")  # fmt: skip
    previous: dict[tuple[int, int], float] = {}
    for n in (int(s) for s in args.scales.split(",")):
        texts = list(dict.fromkeys(normalize_query(q) for q in generate_traffic(n)))
        times: dict[tuple[int, int], list[float]] = {v: [] for v in variants}
        cpus: dict[tuple[int, int], list[float]] = {v: [] for v in variants}
        found: dict[tuple[int, int], tuple[dict, list]] = {}
        for _ in range(args.repeats):
            for v in variants:
                seconds, cpu, best, blocks = partners(texts, *v)
                times[v].append(seconds)
                cpus[v].append(cpu)
                found[v] = (best, blocks)
        med = {v: statistics.median(t) for v, t in times.items()}
        cpu = {v: statistics.median(t) for v, t in cpus.items()}
        sizes = " -> ".join(block_sizes(found[v][1], len(texts)) for v in variants)
        per_q = " / ".join(f"{cpu[v] / len(texts) * 1e6:.0f}" for v in variants)
        growth = " / ".join(f"{cpu[v] / previous[v]:.1f}" for v in variants if v in previous)
        before = f"{med[BEFORE]:>9.1f}" if BEFORE in med else f"{'':>9}"
        ratio, same = f"{'':>6}", f"{'':>13}"
        if BEFORE in med:
            want, got = found[BEFORE][0], found[TODAY][0]
            kept = sum(got.get(i, (None,))[0] == j for i, (j, _) in want.items())
            ratio = f"{med[TODAY] / med[BEFORE]:>6.2f}"
            same = f"{kept / max(len(want), 1):>13.4f}"
        print(f"{len(texts):>9,} {sizes:>24} {before} {med[TODAY]:>8.1f} {ratio} {per_q:>13} "
              f"{growth:>11} {same}", flush=True)  # fmt: skip
        previous = cpu


if __name__ == "__main__":
    main()
