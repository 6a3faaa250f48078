"""Benchmark: the paired randomization test of ``goldmine eval compare`` on 7,000 queries x 10,000
permutations (FACTS.md: ranx's Fisher test 5.35 s, a vectorised numpy sign-flip test 0.16 s;
target under 0.5 s), the bootstrap interval, and a whole five-metric compare. Prints the median of
five runs, peak traced memory, and same-run ratios against a plain chunked sign-matrix product
(the straightforward vectorisation) and, when installed, scipy's ``permutation_test`` and ranx's
``compare`` on the same data.

    .venv/bin/python bench/bench_compare.py
    .venv/bin/python bench/bench_compare.py --queries 50 --repeat 9
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from goldmine.eval.compare import compare_runs
from goldmine.eval.stats import bootstrap_ci, sign_flip_test

METRICS = ("recall@5", "recall@10", "mrr", "ndcg@10", "map")


def make_runs(n: int, seed: int = 7) -> tuple[dict, dict]:
    """Two runs' per-query scores: B a little better than A, with realistic ties and spread."""
    rng = np.random.default_rng(seed)
    base = rng.beta(2, 2, size=n)
    better = np.clip(base + rng.normal(0.01, 0.15, size=n), 0, 1)
    a: dict[str, dict[str, float]] = {}
    b: dict[str, dict[str, float]] = {}
    for i in range(n):
        rank_a = int(rng.integers(1, 12))
        rank_b = max(1, rank_a + int(rng.integers(-2, 2)))
        a[f"q{i}"] = _scores(base[i], rank_a)
        b[f"q{i}"] = _scores(better[i], rank_b)
    return a, b


def _scores(level: float, rank: int) -> dict[str, float]:
    return {
        "recall@5": float(rank <= 5),
        "recall@10": float(rank <= 10),
        "mrr": 1 / rank if rank <= 10 else 0.0,
        "ndcg@10": float(level),
        "map": float(level) * 0.8,
    }


def dense_sign_flip(d: np.ndarray, permutations: int = 10_000, seed: int = 0) -> float:
    """The straightforward vectorisation: a (chunk x n) +-1 matrix times the deltas."""
    rng = np.random.default_rng(seed)
    observed = abs(d.sum())
    count = done = 0
    while done < permutations:
        rows = min(1000, permutations - done)
        signs = rng.integers(0, 2, size=(rows, d.size), dtype=np.int8) * 2 - 1
        count += int(np.count_nonzero(np.abs(signs @ d) >= observed - 1e-9))
        done += rows
    return (count + 1) / (permutations + 1)


def measure(fn: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    """Median seconds, peak traced MB (one extra run), and the result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return statistics.median(times), peak, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--permutations", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n, perms, repeat = args.queries, args.permutations, args.repeat
    a, b = make_runs(n)
    d = np.array([b[q]["ndcg@10"] - a[q]["ndcg@10"] for q in a])
    print(f"{n:,} queries x {perms:,} permutations, median of {repeat}")
    rows: list[tuple[str, float, float, str]] = []

    t, mem, (p, _) = measure(lambda: sign_flip_test(d, perms, 0), repeat)
    rows.append(("goldmine sign-flip test (ndcg@10)", t, mem, f"p = {p:.4f}"))
    ours = t
    t, mem, p = measure(lambda: dense_sign_flip(d, perms, 0), repeat)
    rows.append(("dense +-1 matrix @ deltas (chunked)", t, mem, f"p = {p:.4f}"))
    t, mem, ci = measure(lambda: bootstrap_ci(d, perms, 0), repeat)
    rows.append(("bootstrap 95% CI (ndcg@10)", t, mem, f"[{ci[0]:+.4f}, {ci[1]:+.4f}]"))
    t, mem, c = measure(
        lambda: compare_runs(a, b, list(METRICS), permutations=perms, bootstrap=perms), repeat
    )
    verdicts = ", ".join(f"{m.metric} {m.verdict}" for m in c.metrics)
    rows.append(("compare_runs, 5 metrics (test + CI + Holm)", t, mem, verdicts))

    try:
        from scipy import stats

        def scipy_test() -> float:
            vb = np.array([b[q]["ndcg@10"] for q in b])
            va = np.array([a[q]["ndcg@10"] for q in a])
            return stats.permutation_test(
                (vb, va),
                lambda x, y, axis: np.mean(x - y, axis=axis),
                permutation_type="samples",
                n_resamples=perms,
                vectorized=True,
                batch=500,  # unbatched it holds every permutation at once: 4.8 GB here
                random_state=0,
            ).pvalue

        # One timed run: it is two orders of magnitude slower.
        t, mem, p = measure(scipy_test, 1)
        rows.append(("scipy permutation_test (samples), 1 run", t, mem, f"p = {p:.4f}"))
    except ImportError:
        print("scipy: not installed, skipped")

    try:
        from ranx import Qrels, Run, compare  # noqa: F401
    except ImportError:
        print("ranx: not installed, skipped (FACTS.md: Fisher test 5.35 s, compare 15.7 s)")
    else:
        rows.append(_ranx(n, perms))

    width = max(len(r[0]) for r in rows)
    print(f"{'':<{width}}  {'median s':>9}  {'x ours':>7}  {'peak MB':>8}  result")
    for name, t, mem, note in rows:
        print(f"{name:<{width}}  {t:>9.3f}  {t / ours:>7.1f}  {mem:>8.1f}  {note}")


def _ranx(n: int, perms: int) -> tuple[str, float, float, str]:
    """ranx's compare (Fisher's randomization test) on two runs of the same shape."""
    from ranx import Qrels, Run, compare

    rng = np.random.default_rng(3)
    qrels = Qrels({f"q{i}": {f"d{i}": 1} for i in range(n)})
    runs = []
    for name in ("a", "b"):
        ranking = {}
        for i in range(n):
            docs = {f"x{i}_{j}": float(20 - j) for j in range(10)}
            docs[f"d{i}"] = float(20 - int(rng.integers(0, 12)))
            ranking[f"q{i}"] = docs
        runs.append(Run(ranking, name=name))

    def run_compare() -> object:
        return compare(qrels, runs, ["ndcg@10"], stat_test="fisher", n_permutations=perms)

    run_compare()  # numba compiles on first use: not counted
    # One timed run (it takes seconds); tracemalloc does not see numba's memory.
    t, mem, _ = measure(run_compare, 1)
    return ("ranx compare (fisher, ndcg@10), 1 run", t, mem, "")


if __name__ == "__main__":
    main()
