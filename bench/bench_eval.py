"""Benchmark: whole-process ``goldmine eval run`` against pytrec_eval (and ranx, trec_eval if
present) on the same seeded qrels and run files. Prints medians, peak memory and same-run ratios.

    .venv/bin/python bench/bench_eval.py            # 50x100, 7,000x1,000, 100,000x100
    .venv/bin/python bench/bench_eval.py --quick    # 50x100 only

Each tool runs as its own process, timed from start to exit (import + parse + five metrics),
because at the starter-set size start-up is the product. The comparison metrics are the five
FACTS.md used: success@5, reciprocal rank, nDCG@10, P@10 and MAP.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "eval"
PY = sys.executable
GOLDMINE = [PY, "-m", "goldmine"]
METRICS = "recall@5,mrr,ndcg@10,precision@10,map"

PYTREC_SCRIPT = """
import sys, pytrec_eval
qrels, run = {}, {}
with open(sys.argv[1]) as f:
    for line in f:
        q, _, d, r = line.split()
        qrels.setdefault(q, {})[d] = int(r)
with open(sys.argv[2]) as f:
    for line in f:
        q, _, d, _, s, _ = line.split()[:6]
        run.setdefault(q, {})[d] = float(s)
measures = {"success_5", "recip_rank", "ndcg_cut_10", "P_10", "map"}
ev = pytrec_eval.RelevanceEvaluator(qrels, measures)
res = ev.evaluate(run)
n = len(res)
print({m: sum(v[m] for v in res.values()) / n for m in next(iter(res.values()))})
"""

RANX_SCRIPT = """
import sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
print(evaluate(qrels, run, ["hit_rate@5", "mrr", "ndcg@10", "precision@10", "map"]))
"""


def generate(n_queries: int, depth: int, seed: int = 7) -> tuple[Path, Path]:
    """Seeded qrels (graded 0-3, ~10 judged a query) and a run ``depth`` deep, in TREC format."""
    OUT.mkdir(parents=True, exist_ok=True)
    qrels_path = OUT / f"qrels_{n_queries}x{depth}.txt"
    run_path = OUT / f"run_{n_queries}x{depth}.trec"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = random.Random(seed)
    n_docs = max(10 * depth, 10_000)
    with open(qrels_path, "w") as qf, open(run_path, "w") as rf:
        for q in range(n_queries):
            qid = f"q{q}"
            judged = rng.sample(range(n_docs), 10)
            for d in judged:
                qf.write(f"{qid} 0 D{d} {rng.choice((0, 1, 1, 2, 3))}\n")
            # The run: a few judged docs mixed into random ones, scores descending.
            docs = rng.sample(range(n_docs), depth)
            for d in rng.sample(judged, 4):
                docs[rng.randrange(depth)] = d
            docs = list(dict.fromkeys(docs))
            scores = sorted((rng.random() * 20 for _ in docs), reverse=True)
            rf.writelines(
                f"{qid} Q0 D{d} {r} {s:.6f} bench\n"
                for r, (d, s) in enumerate(zip(docs, scores, strict=True), start=1)
            )
    return qrels_path, run_path


def measure(cmd: list[str], repeats: int, env: dict | None = None) -> tuple[float, float, str]:
    """Median wall seconds and max peak RSS (MB) over ``repeats`` runs of ``cmd``."""
    times, peaks = [], []
    last = ""
    for _ in range(repeats):
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%e %M", *cmd],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[:3]} failed: {proc.stderr[-2000:]}")
        wall, rss = proc.stderr.strip().splitlines()[-1].split()
        times.append(float(wall))
        peaks.append(int(rss) / 1024)
        last = proc.stdout
    return statistics.median(times), max(peaks), last


def has_module(name: str) -> bool:
    probe = subprocess.run([PY, "-c", f"import {name}"], capture_output=True)
    return probe.returncode == 0


def bench_size(n_queries: int, depth: int, repeats: int) -> list[tuple[str, float, float]]:
    qrels, run = generate(n_queries, depth)
    lines = n_queries * depth
    print(f"\n== {n_queries:,} queries x {depth:,} docs ({lines:,} run lines), median of {repeats}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        cmd = [
            *GOLDMINE,
            "eval",
            "run",
            "-g",
            str(qrels),
            "-r",
            str(run),
            "-m",
            METRICS,
            "--db",
            str(db),
        ]
        rows.append(("goldmine eval run", *measure(cmd, repeats)[:2]))
        script = Path(tmp) / "pytrec.py"
        script.write_text(PYTREC_SCRIPT)
        if has_module("pytrec_eval"):
            rows.append(
                ("pytrec_eval", *measure([PY, str(script), str(qrels), str(run)], repeats)[:2])
            )
        if shutil.which("trec_eval"):
            te = [
                "trec_eval",
                "-c",
                "-m",
                "success.5",
                "-m",
                "recip_rank",
                "-m",
                "ndcg_cut.10",
                "-m",
                "P.10",
                "-m",
                "map",
                str(qrels),
                str(run),
            ]
            rows.append(("trec_eval (C)", *measure(te, repeats)[:2]))
        if has_module("ranx") and lines <= 1_000_000:
            ranx = Path(tmp) / "ranx_eval.py"
            ranx.write_text(RANX_SCRIPT)
            rows.append(("ranx", *measure([PY, str(ranx), str(qrels), str(run)], repeats)[:2]))
    base = next((t for name, t, _ in rows if name == "pytrec_eval"), None)
    print(f"{'tool':<20} {'median s':>9} {'peak MB':>8} {'vs pytrec_eval':>15}")
    for name, seconds, peak in rows:
        ratio = f"{seconds / base:.2f}x" if base else "-"
        print(f"{name:<20} {seconds:>9.3f} {peak:>8.0f} {ratio:>15}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the 50 x 100 case")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--sizes", default="50x100,7000x1000,100000x100", help="QUERIESxDEPTH, comma-separated"
    )
    args = parser.parse_args()
    sizes = ["50x100"] if args.quick else args.sizes.split(",")
    for size in sizes:
        n_queries, depth = (int(x) for x in size.split("x"))
        repeats = max(args.repeats, 5) if n_queries * depth <= 100_000 else min(args.repeats, 3)
        bench_size(n_queries, depth, repeats)


if __name__ == "__main__":
    main()
