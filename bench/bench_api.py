"""Benchmark: the Python API against pytrec_eval, in a notebook and as a whole process.

1. ``goldmine.evaluate`` on dicts (2,000 queries x 1,000 scored docs, 20 judged per query, scores
   with ties) against ``pytrec_eval.RelevanceEvaluator`` built and run on the same dicts:
   recall@5 / success_5, mrr / recip_rank, ndcg@10 / ndcg_cut_10. Medians, same-run ratio, and
   a check that the means agree.
2. Start-up, whole process: ``goldmine eval run`` on a 50-query TREC run file (stored, as by
   default, and ``--no-store``) against a whole pytrec_eval process (import, parse the same qrels
   and run with plain Python, score, print), interleaved in the same run. Every process runs
   with its bytecode cached, as after ``pip install`` (which compiles it) or a first run: a shell
   with ``PYTHONDONTWRITEBYTECODE=1`` otherwise compiles goldmine's ~25 modules from source in
   every process (numpy's ``.pyc`` ship in its wheel), ~0.1 s that no installed goldmine pays.

    .venv/bin/python bench/bench_api.py
    .venv/bin/python bench/bench_api.py --queries 500 --docs 200 --repeat 3 --starts 5
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

MEASURES = {"recall@5": "success_5", "mrr": "recip_rank", "ndcg@10": "ndcg_cut_10"}


def make_dicts(n_queries: int, n_docs: int, seed: int = 7) -> tuple[dict, dict]:
    """qrels ``{q: {doc: grade}}`` (20 judged a query, grades 0-3) and a run ``{q: {doc:
    score}}`` (scores on a 0.001 grid: ties, which trec_eval breaks by doc id)."""
    rng = random.Random(seed)
    pool = [f"d{j}" for j in range(5 * n_docs)]
    qrels = {
        f"q{i}": {d: rng.randint(0, 3) for d in rng.sample(pool, 20)} for i in range(n_queries)
    }
    run = {
        f"q{i}": {d: round(rng.random(), 3) for d in rng.sample(pool, n_docs)}
        for i in range(n_queries)
    }
    return qrels, run


def median_of(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def bench_dicts(n_queries: int, n_docs: int, repeat: int) -> None:
    import pytrec_eval

    import goldmine

    qrels, run = make_dicts(n_queries, n_docs)
    ours_times, theirs_times = [], []
    for _ in range(repeat):  # interleaved: a busy machine slows both alike
        t, ours = median_of(lambda: goldmine.evaluate(qrels, run, list(MEASURES)), 1)
        ours_times.append(t)
        t, theirs = median_of(
            lambda: pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values())).evaluate(run), 1
        )
        theirs_times.append(t)
    ours_s, theirs_s = statistics.median(ours_times), statistics.median(theirs_times)
    print(f"evaluate on dicts: {n_queries:,} queries x {n_docs:,} docs, median of {repeat}")
    print(f"  goldmine.evaluate                 {ours_s:7.3f} s")
    print(f"  pytrec_eval.RelevanceEvaluator    {theirs_s:7.3f} s")
    print(f"  ratio goldmine / pytrec_eval      {ours_s / theirs_s:7.2f}x")
    for name, trec in MEASURES.items():
        # per query, on the queries goldmine averages over (those with a relevant doc)
        diff = max(
            abs(scores[name] - theirs[q][trec]) for q, scores in ours.result.per_query.items()
        )
        print(f"  {name:<10} mean {ours.mean[name]:.6f}  max |per-query diff| {diff:.1e}")


def write_files(folder: Path, n_queries: int = 50, n_docs: int = 100) -> tuple[Path, Path]:
    rng = random.Random(1)
    qrels = folder / "gold.qrels"
    run = folder / "run.trec"
    with qrels.open("w") as q, run.open("w") as r:
        for i in range(n_queries):
            for d in rng.sample(range(n_docs), 3):
                q.write(f"q{i} 0 d{d} {rng.randint(1, 2)}\n")
            for rank, d in enumerate(rng.sample(range(n_docs), n_docs), start=1):
                r.write(f"q{i} Q0 d{d} {rank} {n_docs - rank} t\n")
    return qrels, run


# The whole pytrec_eval process: import, parse both files with plain Python, score, print.
PYTREC = """
import sys, pytrec_eval
qrels, run = {}, {}
for line in open(sys.argv[1]):
    q, _, d, g = line.split()
    qrels.setdefault(q, {})[d] = int(g)
for line in open(sys.argv[2]):
    q, _, d, _, s, _ = line.split()
    run.setdefault(q, {})[d] = float(s)
measures = {"success_5", "recip_rank", "ndcg_cut_10"}
out = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
for m in ("success_5", "recip_rank", "ndcg_cut_10"):
    print(m, sum(v[m] for v in out.values()) / len(out))
"""


def cached_bytecode_env(pycache: Path) -> dict[str, str]:
    """The environment with bytecode written and read under ``pycache`` (the checkout's own
    folders stay untouched), whatever ``PYTHONDONTWRITEBYTECODE`` the shell has."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def bench_start(starts: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        qrels, run = write_files(folder)
        goldmine_cli = str(Path(sys.executable).with_name("goldmine"))
        eval_run = [goldmine_cli, "eval", "run", "--gold", str(qrels), "--run", str(run),
                    "--metrics", ",".join(MEASURES), "--json"]  # fmt: skip
        commands = {
            "goldmine eval run (stored)": [*eval_run, "--db", str(folder / "s.duckdb")],
            "goldmine eval run --no-store": [*eval_run, "--no-store"],
            "pytrec_eval process": [sys.executable, "-c", PYTREC, str(qrels), str(run)],
        }
        env = cached_bytecode_env(folder / "pycache")
        for command in commands.values():  # untimed: writes every process's bytecode once
            subprocess.run(command, check=True, capture_output=True, cwd=folder, env=env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(starts):
            for name, command in commands.items():
                start = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True, cwd=folder, env=env)
                times[name].append(time.perf_counter() - start)
    base = statistics.median(times["pytrec_eval process"])
    print(f"\nstart-up, whole process, 50-query run file, median of {starts} (interleaved)")
    for name, values in times.items():
        t = statistics.median(values)
        print(f"  {name:<30} {t:6.3f} s   {t / base:5.2f}x pytrec_eval")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--starts", type=int, default=15)
    args = parser.parse_args()
    bench_dicts(args.queries, args.docs, args.repeat)
    bench_start(args.starts)


if __name__ == "__main__":
    main()
