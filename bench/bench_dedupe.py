"""Fuzzy dedupe as the traffic grows: blocks of common words split (triage.dedupe._split_big)
against the same blocking unsplit, on the same generated queries in the same run.

    .venv/bin/python bench/bench_dedupe.py                 # 50k, 100k, 200k queries
    .venv/bin/python bench/bench_dedupe.py --scales 400000 --repeats 1

Per scale: the largest block, the seconds of ``best_partners`` over every query (what a first
triage run does; medians of ``--repeats``, the two variants alternated), the ratio, and the
share of the unsplit partners the split finds (the same partner for the same query). The growth
column is each variant's time over the previous scale's: 2.0 for twice the queries is linear.
Queries: ``bench_triage.generate_traffic`` (real seed queries from ../shared/datasets with
word-level variants and a Zipf-like pick of the seed), ranked in generation order.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_triage import generate_traffic  # noqa: E402

from goldmine.text import normalize_query  # noqa: E402
from goldmine.triage import dedupe  # noqa: E402

UNSPLIT = 10**12


def partners(texts: list[str], split_at: int) -> tuple[float, dict, int]:
    start = time.perf_counter()
    blocked = dedupe.block_table(texts, split_at)
    best = dedupe.best_partners(list(range(len(texts))), texts, None, blocked)
    return time.perf_counter() - start, best, max(map(len, blocked[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="50000,100000,200000")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"{'queries':>9} {'largest':>15} {'unsplit s':>10} {'split s':>8} {'ratio':>6} "
          f"{'growth':>11} {'same partner':>13}")  # fmt: skip
    previous: tuple[float, float] | None = None
    for n in (int(s) for s in args.scales.split(",")):
        texts = list(dict.fromkeys(normalize_query(q) for q in generate_traffic(n)))
        times: dict[int, list[float]] = {UNSPLIT: [], dedupe.SPLIT_AT: []}
        found: dict[int, tuple[dict, int]] = {}
        for _ in range(args.repeats):
            for split_at in times:
                dedupe._word_set.cache_clear()
                dedupe._digits.cache_clear()
                seconds, best, largest = partners(texts, split_at)
                times[split_at].append(seconds)
                found[split_at] = (best, largest)
        whole, split = (statistics.median(times[k]) for k in (UNSPLIT, dedupe.SPLIT_AT))
        want, got = found[UNSPLIT][0], found[dedupe.SPLIT_AT][0]
        same = sum(got.get(i, (None,))[0] == j for i, (j, _) in want.items()) / max(len(want), 1)
        growth = f"{whole / previous[0]:.1f} / {split / previous[1]:.1f}" if previous else ""
        largest = f"{found[UNSPLIT][1]:,} -> {found[dedupe.SPLIT_AT][1]:,}"
        print(f"{len(texts):>9,} {largest:>15} {whole:>10.1f} {split:>8.1f} "
              f"{split / whole:>6.2f} {growth:>11} {same:>13.4f}")  # fmt: skip
        previous = (whole, split)


if __name__ == "__main__":
    main()
