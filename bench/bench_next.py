"""Benchmark: does ``gold next`` settle a comparison with fewer judgments? (Cranfield)

    .venv/bin/python bench/bench_next.py [--batch 20] [--seeds 10]

Cranfield's 225 queries, with its full judgments as the truth (goldmine grades as ``gold import
--grade-map 1=2,2=2,3=1,4=1,-1=0`` reads them; a pair not in cranqrel is 0). Three built-in
retrievers (BM25, dense with the bundled MiniLM, hybrid) each rank the top 10 for every query;
for each pair of them the judgments are hidden and revealed ``--batch`` at a time in one of three
orders, until the comparison on DCG@10 is decided:

- **gold next**: the pairs ``goldmine.goldset.next.compare_pairs`` proposes (what ``gold next
  --for-compare A B --budget N`` queues), recomputed after each batch;
- **random**: the pairs of the two runs' top 10 in a random order (``--seeds`` orders; median);
- **depth-k pooling**: the depth-1 pool of both runs for every query, then depth 2, ... 10.

Two stopping points, after each batch:

- **settled**: the bounds of the mean DCG@10 delta (whatever the hidden grades are) leave out 0,
  so the verdict is certain; it is the true one by construction;
- **right from then on**: the verdict read from the judged pairs (hidden ones as 0, what a team
  would read) has the true sign and keeps it at every later batch.

Printed: judgments to each point per order, and the same-run ratios random / gold next and
pooling / gold next.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from realdata import load_cranfield, shared_path  # noqa: E402

K = 10
GRADE = {4: 2, 3: 2, 2: 1, 1: 1}  # cleverdon gain (5 - code) -> goldmine grade


def runs(cran) -> dict[str, dict[str, list[str]]]:
    from goldmine.retrieval import BM25Retriever, DenseRetriever, HybridRetriever

    ids = [c.id for c in cran.chunks]
    titles = [c.title for c in cran.chunks]
    texts = [c.text for c in cran.chunks]
    qids = list(cran.queries)
    queries = [cran.queries[q] for q in qids]
    bm25 = BM25Retriever(ids, titles, texts)
    dense = DenseRetriever(ids, texts, titles=titles)
    out = {}
    for name, retriever in (
        ("bm25", bm25),
        ("dense", dense),
        ("hybrid", HybridRetriever(bm25, dense)),
    ):
        hits = retriever.search(queries, K)
        out[name] = {q: [str(c) for c, _ in h[:K]] for q, h in zip(qids, hits, strict=True)}
    return out


def pool(run_a, run_b) -> list[tuple[str, str, int]]:
    """Every (query, chunk) either run ranks in its top K, with its best rank."""
    best: dict[tuple[str, str], int] = {}
    for run in (run_a, run_b):
        for q, ranked in run.items():
            for r, c in enumerate(ranked[:K], 1):
                best[(q, c)] = min(best.get((q, c), r), r)
    return [(q, c, r) for (q, c), r in best.items()]


def simulate(run_a, run_b, truth, order: str, batch: int, seed: int = 0) -> list[tuple]:
    """(judgments so far, settled, sign of the judged estimate) after each batch, to the end."""
    from goldmine.goldset.next import compare_pairs

    judged: dict[str, dict[str, int]] = {q: {} for q in run_a}
    pairs = pool(run_a, run_b)
    if order == "random":
        rng = np.random.default_rng(seed)
        queue = [pairs[i][:2] for i in rng.permutation(len(pairs))]
    elif order == "pooling":
        queue = [(q, c) for q, c, _ in sorted(pairs, key=lambda p: (p[2], int(p[0]), p[1]))]
    else:
        queue = []
    trace, done = [], 0
    while True:
        plan = compare_pairs(run_a, run_b, judged, k=K, budget=batch)
        trace.append((done, plan.settled, np.sign(plan.known)))
        if order == "next":
            picks = [(p.query_id, p.chunk_id) for p in plan.pairs]
            if not picks:  # only pairs that weigh nothing are left: nothing can move
                return trace
        else:
            picks = []
            while queue and len(picks) < batch:
                q, c = queue.pop(0)
                if c not in judged[q]:
                    picks.append((q, c))
            if not picks:
                return trace
        for q, c in picks:
            judged[q][c] = truth.get(q, {}).get(c, 0)
        done += len(picks)


def points(trace, sign) -> tuple[int | None, int]:
    settled = next((n for n, s, _ in trace if s), None)
    right = trace[-1][0]
    for n, _, est in reversed(trace):
        if est != sign:
            break
        right = n
    return settled, right


def main() -> None:
    from goldmine.goldset.next import compare_pairs

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    folder = shared_path("datasets", "cranfield")
    if folder is None:
        print("skipped: ../shared/datasets/cranfield is absent")
        return
    cran = load_cranfield(folder, mapping="cleverdon")
    truth = {
        q: {d: GRADE[g] for d, g in docs.items() if g in GRADE} for q, docs in cran.qrels.items()
    }
    started = time.perf_counter()
    ranked = runs(cran)
    took = time.perf_counter() - started
    print(f"ran bm25, dense, hybrid on {len(cran.queries)} queries: {took:.1f} s")
    for a, b in (("bm25", "dense"), ("bm25", "hybrid"), ("dense", "hybrid")):
        run_a, run_b = ranked[a], ranked[b]
        full = compare_pairs(run_a, run_b, truth, k=K, budget=1)
        sign = np.sign(full.known)
        n_pool = len(pool(run_a, run_b))
        print(
            f"\n{a} vs {b}: true mean DCG@10 delta (B - A) {full.known:+.4f}; "
            f"{n_pool} pairs in the two top-{K} pools"
        )
        results = {}
        started = time.perf_counter()
        results["gold next"] = [points(simulate(run_a, run_b, truth, "next", args.batch), sign)]
        took = time.perf_counter() - started
        results["random"] = [
            points(simulate(run_a, run_b, truth, "random", args.batch, seed), sign)
            for seed in range(args.seeds)
        ]
        results["depth-k pooling"] = [
            points(simulate(run_a, run_b, truth, "pooling", args.batch), sign)
        ]
        med = {}
        for name, rows in results.items():
            settled = [s for s, _ in rows if s is not None]
            right = [r for _, r in rows]
            med[name] = (
                statistics.median(settled) if len(settled) == len(rows) else None,
                statistics.median(right),
            )
            spread = f" [{min(right)}-{max(right)}]" if len(rows) > 1 else ""
            s_txt = (
                f"{med[name][0]:.0f}"
                if med[name][0] is not None
                else f"never ({len(settled)} of {len(rows)})"
            )
            print(
                f"  {name:16} settled after {s_txt:>6} judgments; right from then on after "
                f"{med[name][1]:.0f}{spread}"
            )
        base = med["gold next"]
        for name in ("random", "depth-k pooling"):
            ratios = []
            for i, label in ((0, "settled"), (1, "right")):
                if med[name][i] is not None and base[i]:
                    ratios.append(f"{label} {med[name][i] / base[i]:.2f}x")
            print(f"  {name} / gold next: {', '.join(ratios) or '-'}")
        print(f"  (gold next's simulation: {took:.1f} s)")


if __name__ == "__main__":
    main()
