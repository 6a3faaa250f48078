"""Benchmark: two qrels-like sources of 10,000 judgments each compared from the store.

    .venv/bin/python bench/bench_agreement.py            # 10,000 judgments a side, 7 repeats
    .venv/bin/python bench/bench_agreement.py --n 100000

A fresh store gets two imported sources (``gold_source_grades``, as ``gold import --as-source``
leaves them): 1,000 queries of 10 judged chunks, the second source a noisy copy of the first (a
grade moved by one in a quarter of the units), and 2% of the queries "no answer" on one side, so
the no-answer spreading runs too. ``sources.compare`` is timed whole: both sources' SQL, the
units' join, every figure with its 1,000-round bootstrap interval over queries, the confusion
matrix and the query-level answerable kappa. Beside it, on the same units, the bootstrap as
goldmine computed it before (one scikit-learn kappa per round, over Python lists), for the
same-run ratio. Medians over the repeats; the load average says whether the machine was busy.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from goldmine.goldset import sources
from goldmine.store import open_store, transaction


def fill(con, n: int, per_query: int = 10, seed: int = 0) -> None:
    """Two sources of ``n`` judgments each over n / per_query queries."""
    rng = np.random.default_rng(seed)
    queries = n // per_query
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.25, np.clip(a + rng.choice([-1, 1], n), 0, 2), a)
    import polars as pl

    frame = pl.DataFrame(
        {
            "query_id": [f"q{i // per_query}" for i in range(n)],
            "chunk_id": [f"d{i}" for i in range(n)],
            "a": a,
            "b": b,
        }
    )
    no_answer = [f"q{i}" for i in rng.choice(queries, queries // 50, replace=False)]
    con.register("bench_units", frame)
    for source, column in (("import:a", "a"), ("import:b", "b")):
        con.execute(
            f"""INSERT INTO gold_source_grades
                SELECT ?, query_id, chunk_id, {column}, {column}::VARCHAR, true, 'bench', 1, now()
                FROM bench_units""",
            [source],
        )
    con.executemany(
        "INSERT INTO gold_source_grades VALUES ('import:b', ?, NULL, NULL, 'none', true,"
        " 'bench', 1, now())",
        [(q,) for q in no_answer],
    )
    con.execute(
        "DELETE FROM gold_source_grades WHERE source = 'import:b' AND chunk_id IS NOT NULL"
        " AND list_contains(?, query_id)",
        [no_answer],
    )
    con.unregister("bench_units")


def sklearn_bootstrap(q: np.ndarray, a: np.ndarray, b: np.ndarray, rounds: int = 1000) -> list:
    """The interval as computed before goldset.kappa: a scikit-learn kappa per resample."""
    from sklearn.metrics import cohen_kappa_score

    rng = random.Random(0)
    by_query: dict[int, list[tuple[int, int]]] = {}
    for qi, x, y in zip(q.tolist(), a.tolist(), b.tolist(), strict=True):
        by_query.setdefault(qi, []).append((x, y))
    names = sorted(by_query)
    values = []
    for _ in range(rounds):
        sample = [p for qi in rng.choices(names, k=len(names)) for p in by_query[qi]]
        values.append(
            cohen_kappa_score([x for x, _ in sample], [y for _, y in sample], weights="linear",
                              labels=[0, 1, 2])
        )  # fmt: skip
    values.sort()
    return [values[int(0.025 * rounds)], values[int(0.975 * rounds) - 1]]


def median(fn, reps: int) -> tuple[float, object]:
    times, value = [], None
    for _ in range(reps):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="judgments per source")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--old-reps", type=int, default=3, help="repeats of the earlier way")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        with open_store(db) as con, transaction(con):
            fill(con, args.n)
        a, b = sources.parse("import:a"), sources.parse("import:b")
        with open_store(db) as con:
            compare_s, report = median(lambda: sources.compare(con, a, b), args.reps)
            units_s, u = median(lambda: sources.units(con, a, b), args.reps)
        old_s, old_ci = median(lambda: sklearn_bootstrap(u["query"], u["a"], u["b"]), args.old_reps)
    print(f"load average {os.getloadavg()[0]:.2f}; {args.n:,} judgments a side")
    print(
        f"units both graded: {report['n_units']:,} over {report['n_queries']:,} queries; "
        f"weighted kappa {report['kappa_weighted']:.3f} {report['kappa_weighted_ci95']}"
    )
    print(f"sources.compare (everything, from the store): median {compare_s * 1000:.0f} ms "
          f"over {args.reps}")  # fmt: skip
    print(f"  of which the units' SQL: median {units_s * 1000:.0f} ms")
    print(
        f"the earlier bootstrap (scikit-learn per round, weighted kappa only): median "
        f"{old_s * 1000:.0f} ms over {args.old_reps}; interval {[round(x, 3) for x in old_ci]}"
    )
    print(f"ratio earlier / now: {old_s / compare_s:.1f}x")


if __name__ == "__main__":
    main()
